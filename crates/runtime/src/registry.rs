//! [`Registry`]: the streamlet types an app binary contains, by name.

use std::fmt;
use std::sync::Arc;

use runnel_blueprint::descriptor::{AppDescriptor, DESCRIPTOR_VERSION, StreamletDescriptor};
use runnel_streamlet::{DynStreamlet, Shape, Streamlet};

/// Makes a fresh streamlet for every (re)start of an instance.
pub type Factory = Arc<dyn Fn() -> Box<dyn DynStreamlet> + Send + Sync>;

/// The streamlet types of an app, registered explicitly by name.
///
/// ```
/// use runnel_runtime::Registry;
/// use runnel_streamlet::prelude::*;
/// # #[derive(Serialize, Deserialize, AvroSchema)] struct Reading { celsius: f64 }
/// const IN: Inlet<Reading> = Inlet::new("in");
/// const OUT: Outlet<Reading> = Outlet::new("out");
///
/// let registry = Registry::new().register("copy", || Processor::new(IN, OUT, Some));
/// let descriptor = registry.descriptor("demo");
/// assert_eq!(descriptor.streamlets[0].type_name, "copy");
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<(String, Factory)>,
}

impl Registry {
    /// No streamlet types.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a streamlet type under `type_name`; `factory` makes a fresh instance for
    /// every start and restart.
    pub fn register<S, F>(mut self, type_name: &str, factory: F) -> Self
    where
        S: Streamlet,
        F: Fn() -> S + Send + Sync + 'static,
    {
        let factory: Factory = Arc::new(move || Box::new(factory()) as Box<dyn DynStreamlet>);
        self.entries.push((type_name.to_owned(), factory));
        self
    }

    /// The factory of `type_name`.
    pub fn factory(&self, type_name: &str) -> Option<&Factory> {
        self.entries
            .iter()
            .find(|(name, _)| name == type_name)
            .map(|(_, factory)| factory)
    }

    /// The shape of `type_name`.
    pub fn shape(&self, type_name: &str) -> Option<Shape> {
        self.factory(type_name).map(|factory| factory().shape())
    }

    /// The descriptor of every registered type, as `describe` prints it.
    pub fn descriptor(&self, app: &str) -> AppDescriptor {
        AppDescriptor {
            descriptor_version: DESCRIPTOR_VERSION,
            app: app.to_owned(),
            runnel_version: env!("CARGO_PKG_VERSION").to_owned(),
            streamlets: self
                .entries
                .iter()
                .map(|(name, factory)| -> StreamletDescriptor {
                    factory().shape().descriptor(name)
                })
                .collect(),
        }
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(name, _)| name))
            .finish()
    }
}
