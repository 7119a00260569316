//! The Service of a streamlet that serves HTTP.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::Streamlet;
use crate::names::selector;

/// A ClusterIP Service on the streamlet's `http` port, or `None` when it serves none.
pub(crate) fn service(streamlet: &Streamlet<'_>) -> Option<Service> {
    let port = streamlet.resolved.pod.http_port?;
    Some(Service {
        metadata: streamlet.metadata(),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(selector(streamlet.app.name(), streamlet.instance)),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: i32::from(port),
                target_port: Some(IntOrString::String("http".to_owned())),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    })
}
