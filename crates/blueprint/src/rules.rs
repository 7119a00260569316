//! The verification rules, one file per family, run in order over a shared [`Context`].
//!
//! Each rule reports every problem it finds and records what it resolved for the rules after
//! it; a rule skips what an earlier rule already reported (a port of an instance whose type
//! was not found is not checked), so one mistake gives one diagnostic.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::descriptor::{AppDescriptor, InletDescriptor, OutletDescriptor, StreamletDescriptor};
pub(crate) use crate::facts::Role;
use crate::file::{BlueprintFile, StreamletEntry};

pub(crate) mod app;
pub(crate) mod cycles;
pub(crate) mod kept_schemas;
pub(crate) mod parameters;
pub(crate) mod port_names;
pub(crate) mod ports;
pub(crate) mod schemas;
pub(crate) mod state;
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
    /// The position of each instance in `instances`, by name.
    pub(crate) by_name: HashMap<&'a str, usize>,
    /// Where the blueprint declares the first instance of each descriptor type (by its
    /// position in the descriptor): the type string.
    pub(crate) first_use: Vec<Option<Range<usize>>>,
    /// Names declared in `[streamlets]` with a value that is not a type (already reported).
    unusable: HashSet<&'a str>,
    /// Every port path that named an existing instance, in file order (set by [`ports`]).
    pub(crate) bindings: Vec<Binding<'a>>,
    /// Every port listed on some topic, whatever its direction (set by [`ports`]): the
    /// instance's position and the port name as written.
    pub(crate) mentioned: HashSet<(usize, &'a str)>,
    /// What the app found wrong planning the blueprint's SQL streamlets.
    pub(crate) query_problems: &'a [crate::QueryProblem],
    /// The query files the blueprint names, where problems in their queries are located.
    pub(crate) files: Option<&'a crate::BlueprintFiles>,
}

/// A declared streamlet instance and the type it resolved to.
#[derive(Debug)]
pub(crate) struct Instance<'a> {
    pub(crate) entry: &'a StreamletEntry,
    /// The streamlet type; `None` when it did not resolve or there is no descriptor.
    pub(crate) streamlet: Option<&'a StreamletDescriptor>,
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
    /// The path as written (well-formed: `instance.port`).
    pub(crate) path: &'a str,
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
            by_name: HashMap::new(),
            first_use: Vec::new(),
            unusable: file
                .streamlets
                .iter()
                .flat_map(|section| &section.unusable)
                .map(|name| name.value.as_str())
                .collect(),
            bindings: Vec::new(),
            mentioned: HashSet::new(),
            query_problems: &[],
            files: None,
        }
    }

    /// The index of the instance called `name`.
    pub(crate) fn instance(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Where the blueprint declares the first instance of the streamlet type at `position` in
    /// the descriptor (the type string), to locate problems of the descriptor itself.
    pub(crate) fn declaration_of(&self, position: usize) -> Option<Range<usize>> {
        self.first_use.get(position).cloned().flatten()
    }

    /// Whether a port path's instance that is not declared deserves a diagnostic: not when
    /// the `[streamlets]` table is missing or malformed, or declares the name with a value
    /// that is not a type (all reported already).
    pub(crate) fn undeclared_is_news(&self, name: &str) -> bool {
        let declared = self
            .file
            .streamlets
            .as_ref()
            .is_some_and(|section| !section.malformed);
        declared && !self.unusable.contains(name)
    }
}
