//! [`Application`]: the custom resource as a kube [`Resource`], over the spec and status
//! types of `runnel-application`.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use runnel_application::{
    API_VERSION, ApplicationDocument, ApplicationSpec, ApplicationStatus, GROUP, KIND, PLURAL,
    VERSION,
};
use serde::{Deserialize, Serialize};

/// A Runnel app on a cluster: `runnel.dev/v1alpha1` `Application`, namespaced.
///
/// The spec and status types live in `runnel-application` so that app binaries can write
/// Applications without linking kube; this type gives them the kube [`Resource`] impl,
/// and [`crd`](crate::crd) the CustomResourceDefinition.
///
/// ```
/// use kube::Resource as _;
/// use runnel_operator::Application;
/// assert_eq!(Application::api_version(&()), "runnel.dev/v1alpha1");
/// assert_eq!(Application::url_path(&(), Some("apps")), "/apis/runnel.dev/v1alpha1/namespaces/apps/applications");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Application {
    /// `runnel.dev/v1alpha1`.
    pub api_version: String,
    /// `Application`.
    pub kind: String,
    /// Name, namespace, labels, owner data.
    pub metadata: ObjectMeta,
    /// What the user asks for.
    pub spec: ApplicationSpec,
    /// What the operator observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ApplicationStatus>,
}

impl Application {
    /// A new Application called `name` with `spec`.
    pub fn new(name: &str, spec: ApplicationSpec) -> Application {
        Application {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            spec,
            status: None,
        }
    }

    /// The Application a document (`app build`'s YAML) describes.
    pub fn from_document(document: &ApplicationDocument) -> Application {
        let mut application = Application::new(&document.metadata.name, document.spec.clone());
        application.metadata.namespace = document.metadata.namespace.clone();
        if !document.metadata.labels.is_empty() {
            application.metadata.labels = Some(document.metadata.labels.clone());
        }
        application
    }

    /// The name (Applications always have one).
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

impl Resource for Application {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(KIND)
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(GROUP)
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(VERSION)
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed(PLURAL)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
