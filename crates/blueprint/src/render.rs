//! Reports for people ([`render_human`], rustc style) and for tools ([`render_json`]).

mod human;
mod json;

pub use human::{render_human, render_human_with_files};
pub use json::render_json;
