//! Property tests: random well-formed blueprints over a random descriptor verify without
//! errors (and without panics), and mutating one port path gives the matching problem at
//! that path's position.

use std::ops::Range;
use std::path::Path;

use proptest::prelude::*;
use proptest::sample::Index;
use runnel_blueprint::descriptor::AppDescriptor;
use runnel_blueprint::{Code, verify};
use serde_json::json;

use crate::support::descriptor_json;

/// A random app: streamlet types (inlet count, outlet count), instances (a type each), and for
/// each inlet, which outlet's topic it reads.
#[derive(Clone, Debug)]
struct App {
    types: Vec<(usize, usize)>,
    instances: Vec<Index>,
    readers: Vec<Index>,
}

fn apps() -> impl Strategy<Value = App> {
    (
        prop::collection::vec((0..3usize, 0..3usize), 1..5),
        prop::collection::vec(any::<Index>(), 1..7),
        prop::collection::vec(any::<Index>(), 1..8),
    )
        .prop_map(|(types, instances, readers)| App {
            types,
            instances,
            readers,
        })
}

impl App {
    fn descriptor(&self) -> AppDescriptor {
        let schema = json!({"format": "avro", "name": "long", "definition": "long"});
        let streamlets: Vec<_> = self
            .types
            .iter()
            .enumerate()
            .map(|(index, (inlets, outlets))| {
                json!({
                    "type": format!("type-{index}"),
                    "inlets": (0..*inlets).map(|k| json!({"name": format!("in-{k}"), "schema": schema})).collect::<Vec<_>>(),
                    "outlets": (0..*outlets).map(|k| json!({"name": format!("out-{k}"), "schema": schema})).collect::<Vec<_>>(),
                })
            })
            .collect();
        descriptor_json(json!({"descriptor-version": 1, "app": "random", "streamlets": streamlets}))
    }

    fn type_of(&self, instance: usize) -> (usize, usize) {
        self.types[self.instances[instance].index(self.types.len())]
    }
}

/// A port path written in the blueprint, and where.
#[derive(Clone, Debug)]
struct Written {
    consumer: bool,
    path: String,
    span: Range<usize>,
}

/// Renders the app's blueprint: a topic per outlet, each inlet on some outlet's topic (or on
/// a topic of its own without producers when there is no outlet at all).
fn render(app: &App) -> (String, Vec<Written>) {
    let mut text = String::from("name = \"random\"\n\n[streamlets]\n");
    for index in 0..app.instances.len() {
        let type_index = app.instances[index].index(app.types.len());
        text.push_str(&format!("s{index} = \"type-{type_index}\"\n"));
    }
    let mut outlets = Vec::new();
    let mut inlets = Vec::new();
    for index in 0..app.instances.len() {
        let (inlet_count, outlet_count) = app.type_of(index);
        outlets.extend((0..outlet_count).map(|k| format!("s{index}.out-{k}")));
        inlets.extend((0..inlet_count).map(|k| format!("s{index}.in-{k}")));
    }
    let mut topics: Vec<(Vec<String>, Vec<String>)> = outlets
        .iter()
        .map(|outlet| (vec![outlet.clone()], Vec::new()))
        .collect();
    for (n, inlet) in inlets.iter().enumerate() {
        if topics.is_empty() {
            topics.push((Vec::new(), Vec::new()));
        }
        let choice = app.readers[n % app.readers.len()].index(topics.len());
        topics[choice].1.push(inlet.clone());
    }
    let mut written = Vec::new();
    for (index, (producers, consumers)) in topics.iter().enumerate() {
        text.push_str(&format!("\n[topics.t{index}]\n"));
        for (key, paths, consumer) in [
            ("producers", producers, false),
            ("consumers", consumers, true),
        ] {
            text.push_str(&format!("{key} = ["));
            for (n, path) in paths.iter().enumerate() {
                if n > 0 {
                    text.push_str(", ");
                }
                let start = text.len() + 1;
                text.push_str(&format!("\"{path}\""));
                written.push(Written {
                    consumer,
                    path: path.clone(),
                    span: start..start + path.len(),
                });
            }
            text.push_str("]\n");
        }
    }
    (text, written)
}

/// Replaces the path at `span` with `replacement`, returning the text and the span a
/// diagnostic about it has: the string with its quotes.
fn replace(text: &str, span: &Range<usize>, replacement: &str) -> (String, Range<usize>) {
    let mutated = format!("{}{replacement}{}", &text[..span.start], &text[span.end..]);
    (mutated, span.start - 1..span.start + replacement.len() + 1)
}

/// The diagnostics of a code, as byte spans.
fn spans_of(text: &str, descriptor: &AppDescriptor, code: Code) -> Vec<Range<usize>> {
    verify(Path::new("random.toml"), text, descriptor)
        .diagnostics
        .into_iter()
        .filter(|d| d.code == code)
        .filter_map(|d| d.location.map(|l| l.span))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn well_formed_blueprints_verify_without_errors(app in apps()) {
        let (text, _) = render(&app);
        let verification = verify(Path::new("random.toml"), &text, &app.descriptor());
        let errors: Vec<_> = verification.diagnostics.iter().filter(|d| d.is_error()).collect();
        prop_assert!(errors.is_empty(), "{text}\n{errors:#?}");
        prop_assert!(verification.blueprint.is_some());
        // Only the warnings a random graph may deserve.
        for diagnostic in &verification.diagnostics {
            prop_assert!(matches!(
                diagnostic.code,
                Code::TopicWithoutConsumers | Code::TopicWithoutProducers | Code::CycleInGraph
            ), "{diagnostic}");
        }
    }

    #[test]
    fn a_path_to_a_missing_port_is_not_found_where_it_is_written(app in apps(), pick in any::<Index>()) {
        let (text, written) = render(&app);
        prop_assume!(!written.is_empty());
        let target = &written[pick.index(written.len())];
        let (instance, _) = target.path.split_once('.').unwrap();
        let (mutated, span) = replace(&text, &target.span, &format!("{instance}.no-such-port"));
        prop_assert_eq!(spans_of(&mutated, &app.descriptor(), Code::PortPathNotFound), vec![span]);
    }

    #[test]
    fn a_path_without_a_port_is_invalid_where_it_is_written(app in apps(), pick in any::<Index>()) {
        let (text, written) = render(&app);
        prop_assume!(!written.is_empty());
        let target = &written[pick.index(written.len())];
        let (mutated, span) = replace(&text, &target.span, &target.path.replace('.', "_"));
        prop_assert_eq!(spans_of(&mutated, &app.descriptor(), Code::InvalidPortPath), vec![span]);
    }

    #[test]
    fn an_inlet_swapped_into_the_producers_is_reported(app in apps(), pick in any::<Index>(), inlet in any::<Index>()) {
        let (text, written) = render(&app);
        let producers: Vec<_> = written.iter().filter(|w| !w.consumer).collect();
        let inlets: Vec<_> = written.iter().filter(|w| w.consumer).collect();
        prop_assume!(!producers.is_empty() && !inlets.is_empty());
        let target = producers[pick.index(producers.len())];
        let inlet = &inlets[inlet.index(inlets.len())].path;
        let (mutated, span) = replace(&text, &target.span, inlet);
        prop_assert_eq!(spans_of(&mutated, &app.descriptor(), Code::InvalidProducerPortPath), vec![span]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the text, verification reports and never panics, and every location points
    /// inside the text.
    #[test]
    fn any_text_verifies_without_panicking(app in apps(), cuts in prop::collection::vec((any::<Index>(), "[\\[\\]\"=.,a-z\\n ]{0,3}"), 0..4)) {
        let (mut text, _) = render(&app);
        for (at, insert) in cuts {
            let mut position = at.index(text.len() + 1);
            while !text.is_char_boundary(position) {
                position -= 1;
            }
            let end = (position + 2).min(text.len());
            let end = if text.is_char_boundary(end) { end } else { position };
            text.replace_range(position..end, &insert);
        }
        let verification = verify(Path::new("random.toml"), &text, &app.descriptor());
        for diagnostic in &verification.diagnostics {
            if let Some(location) = &diagnostic.location {
                prop_assert!(location.span.end <= text.len(), "{diagnostic:?}");
            }
        }
        let _ = runnel_blueprint::render_human(&verification.diagnostics, &text);
    }
}
