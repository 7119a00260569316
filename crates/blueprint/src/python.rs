//! Python streamlets: instances declared in the blueprint by a `module:attribute` reference
//! rather than registered in the app. The app describes each (`python -m runnel describe`),
//! registers it as the type [`python_type_name`], and hands verification what describing
//! found wrong, reported at the reference.

/// The type name an app registers a Python streamlet instance under: `python:<instance>`.
///
/// ```
/// assert_eq!(runnel_blueprint::python_type_name("scorer"), "python:scorer");
/// ```
pub fn python_type_name(instance: &str) -> String {
    format!("python:{instance}")
}
