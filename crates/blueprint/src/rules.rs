//! The verification rules, one file per family, run in order over a shared [`Context`].
//!
//! Each rule reports every problem it finds and records what it resolved for the rules after
//! it; a rule skips what an earlier rule already reported (a port of an instance whose type
//! was not found is not checked), so one mistake gives one diagnostic.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::blueprint::PortPath;
use crate::descriptor::{AppDescriptor, InletDescriptor, OutletDescriptor, StreamletDescriptor};
use crate::file::{BlueprintFile, StreamletEntry};

pub(crate) mod app;
pub(crate) mod cycles;
pub(crate) mod parameters;
pub(crate) mod port_names;
pub(crate) mod ports;
pub(crate) mod schemas;
pub(crate) mod streamlets;
pub(crate) mod topics;
pub(crate) mod volumes;

/// What the rules share: the parsed file, the descriptor (absent for a descriptor-free
/// parse), and what earlier rules resolved.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    pub(crate) file: &'a BlueprintFile,
    pub(crate) descriptor: Option<&'a AppDescriptor>,
    /// Every declared instance, in file order (set by [`streamlets`]).
    pub(crate) instances: Vec<Instance<'a>>,
    /// Every port path that named an existing instance, in file order (set by [`ports`]).
    pub(crate) bindings: Vec<Binding<'a>>,
    /// Every port listed on some topic, whatever its direction (set by [`ports`]).
    pub(crate) mentioned: BTreeSet<PortPath>,
}

/// A declared streamlet instance and the type it resolved to.
#[derive(Debug)]
pub(crate) struct Instance<'a> {
    pub(crate) entry: &'a StreamletEntry,
    /// The streamlet type; `None` when it did not resolve or there is no descriptor.
    pub(crate) streamlet: Option<&'a StreamletDescriptor>,
}

/// Whether a port path is listed as a producer or a consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Producer,
    Consumer,
}

/// A port resolved in the descriptor.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Port<'a> {
    Inlet(&'a InletDescriptor),
    Outlet(&'a OutletDescriptor),
}

/// A port path on a topic, resolved as far as possible.
#[derive(Debug)]
pub(crate) struct Binding<'a> {
    /// Index into `file.topics`.
    pub(crate) topic: usize,
    pub(crate) role: Role,
    pub(crate) path: PortPath,
    pub(crate) span: Range<usize>,
    /// Index into `instances`.
    pub(crate) instance: usize,
    /// The port, when the descriptor has it in the right direction.
    pub(crate) port: Option<Port<'a>>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(file: &'a BlueprintFile, descriptor: Option<&'a AppDescriptor>) -> Self {
        Context {
            file,
            descriptor,
            instances: Vec::new(),
            bindings: Vec::new(),
            mentioned: BTreeSet::new(),
        }
    }

    /// The index of the instance called `name`.
    pub(crate) fn instance(&self, name: &str) -> Option<usize> {
        self.instances
            .iter()
            .position(|instance| instance.entry.name.value == name)
    }

    /// Where the blueprint declares the first instance of a streamlet type (the type string),
    /// to locate problems of the descriptor itself.
    pub(crate) fn declaration_of(&self, streamlet: &StreamletDescriptor) -> Option<Range<usize>> {
        self.instances
            .iter()
            .find(|instance| {
                instance
                    .streamlet
                    .is_some_and(|s| std::ptr::eq(s, streamlet))
            })
            .map(|instance| instance.entry.type_ref.span.clone())
    }
}
