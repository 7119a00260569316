//! [`Trigger`]: when a window's panes fire, as a value composed from Beam's triggers.
//!
//! A trigger is a small tree: leaves say what can make a pane fire (the watermark passing
//! the end of the window, a processing-time delay, a number of elements, nothing), and
//! combinators say how leaves combine (repeat, in sequence, whichever first, all of them,
//! until another fires). The tree is kept flat, in pre-order, in a fixed array, so a
//! trigger is a `Copy` value that `const` items can build, like the rest of a
//! [`WindowSpec`](super::WindowSpec). Its rules are checked by [`WindowSpec::check`]
//! (module `trigger_check`); what it does per window is module `trigger_state`.
//!
//! [`WindowSpec::check`]: super::WindowSpec::check

use std::fmt;
use std::time::Duration;

use super::windows::millis;

/// The most parts (leaves and combinators) a trigger may have.
pub(crate) const MAX_PARTS: usize = 16;

/// One part of a trigger. Children follow their parent in pre-order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    /// An unused slot.
    Empty,
    /// Fires when the watermark passes the end of the window. Children: the early part, if
    /// `early`, then the late part, if `late`.
    Watermark { early: bool, late: bool },
    /// Fires `delay` of processing time after the first element of the pane; with a
    /// `period` (0 means none), at the first multiple of `period` (plus `offset`) from
    /// then on.
    ProcessingTime {
        delay: i64,
        period: i64,
        offset: i64,
    },
    /// Fires once the pane holds this many elements.
    ElementCount(u32),
    /// Never fires.
    Never,
    /// Fires whenever its one child does, forever.
    Repeatedly,
    /// Fires as its children do, one after the other.
    AfterEach(u8),
    /// Fires once, when any child would.
    AfterFirst(u8),
    /// Fires once, when every child would.
    AfterAll(u8),
    /// Fires as its first child does, until its second fires.
    OrFinally,
}

/// A mistake made while building a trigger, reported by [`WindowSpec::check`].
///
/// [`WindowSpec::check`]: super::WindowSpec::check
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// More than [`MAX_PARTS`] parts.
    TooLarge,
    /// A method that applies to one kind of trigger was called on another.
    WrongReceiver {
        method: &'static str,
        expected: &'static str,
    },
    /// A combinator was given no triggers.
    NoParts { combinator: &'static str },
    /// A processing-time trigger was aligned to a period of zero.
    ZeroPeriod,
}

/// When a window emits panes: the Dataflow model's triggers, as composable values.
///
/// The leaves, each Beam's trigger of the same meaning:
///
/// | leaf | fires | Beam |
/// |---|---|---|
/// | [`watermark()`](Self::watermark) | when the watermark passes the end of the window | `AfterWatermark.pastEndOfWindow()` |
/// | [`after_processing_time(d)`](Self::after_processing_time) | `d` of processing time after the first element of the pane | `AfterProcessingTime.pastFirstElementInPane().plusDelayOf(d)` |
/// | [`.aligned_to(p)`](Self::aligned_to) | at the next multiple of `p` instead: every key together | `.alignedTo(p)` |
/// | [`element_count(n)`](Self::element_count) | once the pane holds `n` elements | `AfterPane.elementCountAtLeast(n)` |
/// | [`never()`](Self::never) | never (only the final pane when the window expires) | `Never.ever()` |
///
/// and the combinators: [`repeatedly`](Self::repeatedly) (`Repeatedly.forever`),
/// [`after_each`](Self::after_each) (`AfterEach.inOrder`), [`after_first`](Self::after_first)
/// (`AfterFirst.of`), [`after_all`](Self::after_all) (`AfterAll.of`),
/// [`or_finally`](Self::or_finally) (`.orFinally`), and the watermark's
/// [`early`](Self::early) and [`late`](Self::late) firings (`withEarlyFirings`,
/// `withLateFirings`), which repeat by themselves.
///
/// A trigger says when panes *may* fire; a pane is emitted when it has elements it has not
/// emitted yet, and always for the on-time pane (see [`OnTimeBehavior`]) and, if asked,
/// for the final pane (see [`ClosingBehavior`]). [`WindowSpec::check`] enforces Beam's
/// rules: the early, late and `or_finally` parts and the parts of `after_first` and
/// `after_all` fire once, and no trigger may finish before its window expires.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{Trigger, WindowSpec};
///
/// // Beam's classic: speculative panes a minute after the first element of each, the
/// // on-time pane, then a pane for every late element.
/// const SCORES: Trigger = Trigger::watermark()
///     .early(Trigger::after_processing_time(Duration::from_secs(60)))
///     .late(Trigger::element_count(1));
///
/// // A pane per element and no on-time pane: Repeatedly.forever(AfterPane.elementCountAtLeast(1)).
/// const EVERY_ELEMENT: Trigger = Trigger::repeatedly(Trigger::element_count(1));
///
/// // Every key fires together on each minute of processing time, until the window is complete.
/// const EVERY_MINUTE: Trigger = Trigger::repeatedly(
///     Trigger::after_processing_time(Duration::ZERO).aligned_to(Duration::from_secs(60)),
/// )
/// .or_finally(Trigger::watermark());
///
/// for trigger in [SCORES, EVERY_ELEMENT, EVERY_MINUTE] {
///     let spec = WindowSpec::tumbling(Duration::from_secs(120)).trigger(trigger);
///     assert!(spec.check().is_ok(), "{trigger}");
/// }
/// assert_eq!(EVERY_ELEMENT.to_string(), "repeatedly(element_count(1))");
/// ```
///
/// [`OnTimeBehavior`]: super::OnTimeBehavior
/// [`ClosingBehavior`]: super::ClosingBehavior
/// [`WindowSpec::check`]: super::WindowSpec::check
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    nodes: [Node; MAX_PARTS],
    /// The number of parts in the subtree of each part, itself included.
    sizes: [u8; MAX_PARTS],
    len: u8,
    fault: Option<Fault>,
}

/// The firing conditions of the early and late parts of a watermark trigger, in the form
/// this crate first had them: [`Firing::after_delay`], [`Firing::every`] and
/// [`or_every`](Trigger::or_every). They are ordinary triggers now.
///
/// ```
/// use std::time::Duration;
/// use runnel_event_time::window::{Firing, Trigger};
/// const TRIGGER: Trigger = Trigger::on_time()
///     .early(Firing::after_delay(Duration::from_secs(30)).or_every(100));
/// assert_eq!(
///     TRIGGER.to_string(),
///     "watermark().early(after_first(after_processing_time(30 s), element_count(100))).late(element_count(1))"
/// );
/// ```
pub type Firing = Trigger;

impl Trigger {
    const fn leaf(node: Node) -> Self {
        let mut nodes = [Node::Empty; MAX_PARTS];
        let mut sizes = [0; MAX_PARTS];
        nodes[0] = node;
        sizes[0] = 1;
        Trigger {
            nodes,
            sizes,
            len: 1,
            fault: None,
        }
    }

    /// Fires once, when the watermark passes the end of the window (Beam's
    /// `AfterWatermark.pastEndOfWindow()`): the on-time pane. Add [`early`](Self::early)
    /// and [`late`](Self::late) firings to it.
    pub const fn watermark() -> Self {
        Self::leaf(Node::Watermark {
            early: false,
            late: false,
        })
    }

    /// The on-time pane, then a pane for every late element: Beam's default trigger
    /// (`Repeatedly.forever(AfterWatermark.pastEndOfWindow())`), written as
    /// `watermark().late(element_count(1))`.
    pub const fn on_time() -> Self {
        Self::watermark().late(Self::element_count(1))
    }

    /// Fires once, `delay` of processing time after the first element of the pane (Beam's
    /// `AfterProcessingTime.pastFirstElementInPane().plusDelayOf(delay)`): unaligned, each
    /// key and window on its own clock.
    pub const fn after_processing_time(delay: Duration) -> Self {
        Self::leaf(Node::ProcessingTime {
            delay: millis(delay),
            period: 0,
            offset: 0,
        })
    }

    /// Rounds a processing-time trigger's time up to the next multiple of `period` since
    /// the Unix epoch (a time on a multiple stays), so every key and window that has an
    /// element waiting fires together on the period's boundaries (Beam's `alignedTo`).
    /// Only for [`after_processing_time`](Self::after_processing_time).
    pub const fn aligned_to(self, period: Duration) -> Self {
        self.aligned_to_offset(period, Duration::ZERO)
    }

    /// Like [`aligned_to`](Self::aligned_to), with boundaries at `offset` past each
    /// multiple of `period` (Beam's `alignedTo(period, offset)`).
    pub const fn aligned_to_offset(mut self, period: Duration, offset: Duration) -> Self {
        if millis(period) == 0 {
            return self.with_fault(Fault::ZeroPeriod);
        }
        match self.nodes[0] {
            Node::ProcessingTime { delay, .. } if self.len == 1 => {
                self.nodes[0] = Node::ProcessingTime {
                    delay,
                    period: millis(period),
                    offset: millis(offset),
                };
                self
            }
            _ => self.with_fault(Fault::WrongReceiver {
                method: "aligned_to",
                expected: "Trigger::after_processing_time(...)",
            }),
        }
    }

    /// Fires once, when the pane holds `count` elements (Beam's
    /// `AfterPane.elementCountAtLeast(count)`). A count of zero is an error
    /// ([`SpecError::ZeroCount`](super::SpecError::ZeroCount)).
    pub const fn element_count(count: u32) -> Self {
        Self::leaf(Node::ElementCount(count))
    }

    /// Never fires: a window emits only its final pane, when it expires, if it has
    /// elements (or always, with [`ClosingBehavior::FireAlways`]). Beam's `Never.ever()`.
    ///
    /// [`ClosingBehavior::FireAlways`]: super::ClosingBehavior::FireAlways
    pub const fn never() -> Self {
        Self::leaf(Node::Never)
    }

    /// Fires whenever `trigger` fires, starting it afresh each time, and never finishes
    /// (Beam's `Repeatedly.forever`).
    pub const fn repeatedly(trigger: Trigger) -> Self {
        Self::leaf(Node::Repeatedly).append(&trigger)
    }

    /// Fires as the first trigger does until it finishes, then as the second, and so on;
    /// finishes with the last (Beam's `AfterEach.inOrder`).
    pub const fn after_each(triggers: &[Trigger]) -> Self {
        Self::combine(Node::AfterEach(0), "after_each", triggers)
    }

    /// Fires once, as soon as any of `triggers` would (Beam's `AfterFirst.of`). Each must
    /// fire once.
    pub const fn after_first(triggers: &[Trigger]) -> Self {
        Self::combine(Node::AfterFirst(0), "after_first", triggers)
    }

    /// Fires once, when every one of `triggers` would (Beam's `AfterAll.of`). Each must
    /// fire once.
    pub const fn after_all(triggers: &[Trigger]) -> Self {
        Self::combine(Node::AfterAll(0), "after_all", triggers)
    }

    /// Fires as `self` does, and fires a last time and finishes when `until` fires (Beam's
    /// `orFinally`). `until` must fire once.
    pub const fn or_finally(self, until: Trigger) -> Self {
        Self::leaf(Node::OrFinally).append(&self).append(&until)
    }

    /// Adds early firings to a watermark trigger: before the watermark passes the end of
    /// the window, a pane whenever `firing` fires, which then starts afresh (Beam's
    /// `withEarlyFirings`). `firing` must fire once: a count, a delay, `after_first`, ...
    pub const fn early(self, firing: Trigger) -> Self {
        match self.nodes[0] {
            Node::Watermark { late, .. } => {
                let mut trigger = Self::leaf(Node::Watermark { early: true, late });
                trigger = trigger.append(&firing);
                if late {
                    trigger = trigger.append(&self.part(self.late_child()));
                }
                trigger
            }
            _ => self.with_fault(Fault::WrongReceiver {
                method: "early",
                expected: "Trigger::watermark()",
            }),
        }
    }

    /// Adds late firings to a watermark trigger: after the on-time pane, a pane whenever
    /// `firing` fires, which then starts afresh, until the window expires (Beam's
    /// `withLateFirings`). `firing` must fire once.
    pub const fn late(self, firing: Trigger) -> Self {
        match self.nodes[0] {
            Node::Watermark { early, .. } => {
                let mut trigger = Self::leaf(Node::Watermark { early, late: true });
                if early {
                    trigger = trigger.append(&self.part(1));
                }
                trigger.append(&firing)
            }
            _ => self.with_fault(Fault::WrongReceiver {
                method: "late",
                expected: "Trigger::watermark()",
            }),
        }
    }

    /// Fires once, `delay` of processing time after the first element of the pane: the
    /// earlier name of [`after_processing_time`](Self::after_processing_time).
    pub const fn after_delay(delay: Duration) -> Self {
        Self::after_processing_time(delay)
    }

    /// Fires once the pane holds `count` elements (0 counts as 1): the earlier name of
    /// [`element_count`](Self::element_count).
    pub const fn every(count: u32) -> Self {
        Self::element_count(if count == 0 { 1 } else { count })
    }

    /// Fires when `self` would or once the pane holds `count` elements (0 counts as 1),
    /// whichever comes first: `after_first(&[self, element_count(count)])`.
    pub const fn or_every(self, count: u32) -> Self {
        Self::after_first(&[self, Self::every(count)])
    }

    const fn combine(node: Node, combinator: &'static str, triggers: &[Trigger]) -> Self {
        if triggers.is_empty() {
            return Self::leaf(node).with_fault(Fault::NoParts { combinator });
        }
        let count = if triggers.len() > MAX_PARTS {
            MAX_PARTS as u8
        } else {
            triggers.len() as u8
        };
        let node = match node {
            Node::AfterEach(_) => Node::AfterEach(count),
            Node::AfterFirst(_) => Node::AfterFirst(count),
            _ => Node::AfterAll(count),
        };
        let mut trigger = Self::leaf(node);
        let mut i = 0;
        while i < triggers.len() {
            trigger = trigger.append(&triggers[i]);
            i += 1;
        }
        trigger
    }

    /// Appends `child` as the next child of the root.
    const fn append(mut self, child: &Trigger) -> Self {
        if let Some(fault) = child.fault
            && self.fault.is_none()
        {
            self.fault = Some(fault);
        }
        let start = self.len as usize;
        if start + child.len as usize > MAX_PARTS {
            return self.with_fault(Fault::TooLarge);
        }
        let mut i = 0;
        while i < child.len as usize {
            self.nodes[start + i] = child.nodes[i];
            self.sizes[start + i] = child.sizes[i];
            i += 1;
        }
        self.len += child.len;
        self.sizes[0] = self.len;
        self
    }

    const fn with_fault(mut self, fault: Fault) -> Self {
        if self.fault.is_none() {
            self.fault = Some(fault);
        }
        self
    }

    /// The subtree at `at`, as a trigger of its own.
    pub(crate) const fn part(&self, at: usize) -> Trigger {
        let mut part = Self::leaf(Node::Empty);
        let size = self.sizes[at] as usize;
        let mut i = 0;
        while i < size {
            part.nodes[i] = self.nodes[at + i];
            part.sizes[i] = self.sizes[at + i];
            i += 1;
        }
        part.len = size as u8;
        part
    }

    /// The index of the late part of the watermark trigger at the root.
    const fn late_child(&self) -> usize {
        match self.nodes[0] {
            Node::Watermark { early: true, .. } => 1 + self.sizes[1] as usize,
            _ => 1,
        }
    }

    /// The part at `at`.
    pub(crate) const fn node(&self, at: usize) -> Node {
        self.nodes[at]
    }

    /// The number of parts.
    pub(crate) const fn len(&self) -> usize {
        self.len as usize
    }

    /// The mistake made while building it, if any.
    pub(crate) const fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// The index of the `n`th child of the part at `at`.
    pub(crate) const fn child(&self, at: usize, n: usize) -> usize {
        let mut child = at + 1;
        let mut i = 0;
        while i < n {
            child += self.sizes[child] as usize;
            i += 1;
        }
        child
    }

    /// How many children the part at `at` has.
    pub(crate) const fn child_count(&self, at: usize) -> usize {
        match self.nodes[at] {
            Node::Watermark { early, late } => early as usize + late as usize,
            Node::Repeatedly => 1,
            Node::OrFinally => 2,
            Node::AfterEach(n) | Node::AfterFirst(n) | Node::AfterAll(n) => n as usize,
            _ => 0,
        }
    }

    /// The indices `at..at + size` of the part at `at` and everything under it.
    pub(crate) const fn span(&self, at: usize) -> std::ops::Range<usize> {
        at..at + self.sizes[at] as usize
    }

    fn write(&self, at: usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let children = |f: &mut fmt::Formatter<'_>| -> fmt::Result {
            for n in 0..self.child_count(at) {
                if n > 0 {
                    f.write_str(", ")?;
                }
                self.write(self.child(at, n), f)?;
            }
            Ok(())
        };
        match self.nodes[at] {
            Node::Empty => f.write_str("?"),
            Node::Watermark { early, late } => {
                f.write_str("watermark()")?;
                if early {
                    f.write_str(".early(")?;
                    self.write(at + 1, f)?;
                    f.write_str(")")?;
                }
                if late {
                    f.write_str(".late(")?;
                    self.write(self.child(at, early as usize), f)?;
                    f.write_str(")")?;
                }
                Ok(())
            }
            Node::ProcessingTime {
                delay,
                period,
                offset,
            } => {
                write!(f, "after_processing_time({})", Millis(delay))?;
                match (period, offset) {
                    (0, _) => Ok(()),
                    (period, 0) => write!(f, ".aligned_to({})", Millis(period)),
                    (period, offset) => write!(
                        f,
                        ".aligned_to_offset({}, {})",
                        Millis(period),
                        Millis(offset)
                    ),
                }
            }
            Node::ElementCount(count) => write!(f, "element_count({count})"),
            Node::Never => f.write_str("never()"),
            Node::Repeatedly => {
                f.write_str("repeatedly(")?;
                children(f)?;
                f.write_str(")")
            }
            Node::AfterEach(_) | Node::AfterFirst(_) | Node::AfterAll(_) => {
                f.write_str(match self.nodes[at] {
                    Node::AfterEach(_) => "after_each(",
                    Node::AfterFirst(_) => "after_first(",
                    _ => "after_all(",
                })?;
                children(f)?;
                f.write_str(")")
            }
            Node::OrFinally => {
                self.write(at + 1, f)?;
                f.write_str(".or_finally(")?;
                self.write(self.child(at, 1), f)?;
                f.write_str(")")
            }
        }
    }
}

/// A length of time in milliseconds, written as people write it: `60 s`, `250 ms`.
struct Millis(i64);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ms if ms != 0 && ms % 3_600_000 == 0 => write!(f, "{} h", ms / 3_600_000),
            ms if ms != 0 && ms % 60_000 == 0 => write!(f, "{} min", ms / 60_000),
            ms if ms != 0 && ms % 1_000 == 0 => write!(f, "{} s", ms / 1_000),
            ms => write!(f, "{ms} ms"),
        }
    }
}

impl Default for Trigger {
    /// [`Trigger::on_time`]: Beam's default trigger.
    fn default() -> Self {
        Trigger::on_time()
    }
}

impl fmt::Display for Trigger {
    /// The trigger as it is written in Rust, without the `Trigger::` prefixes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(0, f)
    }
}

impl fmt::Debug for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Trigger({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn triggers_print_as_they_are_written() {
        let cases = [
            (Trigger::on_time(), "watermark().late(element_count(1))"),
            (
                Trigger::watermark()
                    .late(Trigger::element_count(2))
                    .early(Trigger::after_processing_time(MINUTE)),
                "watermark().early(after_processing_time(1 min)).late(element_count(2))",
            ),
            (
                Trigger::repeatedly(
                    Trigger::after_processing_time(Duration::ZERO).aligned_to(MINUTE),
                )
                .or_finally(Trigger::watermark()),
                "repeatedly(after_processing_time(0 ms).aligned_to(1 min)).or_finally(watermark())",
            ),
            (
                Trigger::after_each(&[
                    Trigger::element_count(3),
                    Trigger::repeatedly(Trigger::after_all(&[
                        Trigger::element_count(1),
                        Trigger::after_processing_time(Duration::from_millis(1_500)),
                    ])),
                ]),
                "after_each(element_count(3), repeatedly(after_all(element_count(1), after_processing_time(1500 ms))))",
            ),
        ];
        for (trigger, written) in cases {
            assert_eq!(trigger.to_string(), written);
            assert_eq!(trigger.fault(), None);
        }
    }

    #[test]
    fn the_tree_is_kept_in_pre_order_with_subtree_sizes() {
        let trigger = Trigger::after_each(&[
            Trigger::repeatedly(Trigger::element_count(2)),
            Trigger::never(),
        ]);
        assert_eq!(trigger.len(), 4);
        assert_eq!(trigger.child_count(0), 2);
        assert_eq!(trigger.child(0, 0), 1);
        assert_eq!(trigger.child(0, 1), 3);
        assert_eq!(trigger.node(2), Node::ElementCount(2));
        assert_eq!(trigger.span(1), 1..3);
        assert_eq!(trigger.part(1).to_string(), "repeatedly(element_count(2))");
    }

    #[test]
    fn building_mistakes_are_kept_for_the_check() {
        let early_on_a_count = Trigger::element_count(3).early(Trigger::element_count(1));
        assert_eq!(
            early_on_a_count.fault(),
            Some(Fault::WrongReceiver {
                method: "early",
                expected: "Trigger::watermark()"
            })
        );
        assert_eq!(
            Trigger::after_first(&[]).fault(),
            Some(Fault::NoParts {
                combinator: "after_first"
            })
        );
        let mut big = Trigger::element_count(1);
        for _ in 0..MAX_PARTS {
            big = Trigger::repeatedly(big);
        }
        assert_eq!(big.fault(), Some(Fault::TooLarge));
        let nested = Trigger::repeatedly(Trigger::element_count(1).aligned_to(MINUTE));
        assert!(matches!(nested.fault(), Some(Fault::WrongReceiver { .. })));
    }
}
