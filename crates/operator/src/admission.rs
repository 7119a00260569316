//! The validating admission webhook's decision: an `AdmissionReview` of an Application in,
//! the review with the operator's verdict out. Pure; [`webhook`](crate::webhook) serves it.
//!
//! The API server asks before it stores an Application that is created or whose spec
//! changes, so one applied by GitOps or `kubectl apply` that the operator could not carry
//! out is refused with the verifier's message instead of being stored and failing later.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Application;
use crate::verify::{Secrets, verify};

/// The `admission.k8s.io/v1` `AdmissionReview` the API server sends and expects back.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1`.
    pub api_version: String,
    /// `AdmissionReview`.
    pub kind: String,
    /// What the API server asks (in the request it sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<AdmissionRequest>,
    /// The verdict (in the answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<AdmissionResponse>,
}

/// The part of an admission request the operator reads.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Identifies the request; the response repeats it.
    pub uid: String,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// The object as it would be stored.
    #[serde(default)]
    pub object: Option<Value>,
    /// The object as it is stored (on `UPDATE`).
    #[serde(default)]
    pub old_object: Option<Value>,
}

/// The verdict.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's uid.
    pub uid: String,
    /// Whether the object may be stored.
    pub allowed: bool,
    /// Why not: `{"code": 422, "reason": "Invalid", "message": ...}`; kubectl prints the
    /// message after `admission webhook "..." denied the request:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Value>,
}

/// What the verdict depends on besides the Application: what the operator would check it
/// against.
#[derive(Clone, Debug, Default)]
pub struct AdmissionContext {
    /// The operator's version, named in a protocol mismatch.
    pub operator_version: String,
    /// The Kafka cluster for Applications that name none (`runnel operator run --kafka`).
    pub default_bootstrap_servers: Option<String>,
}

/// Decides on `review`'s request: an Application created, or updated with another spec,
/// is allowed when its spec verifies (the protocol version, the blueprint against the
/// descriptor, the configuration values it holds, a Kafka cluster), and refused with the
/// verifier's message otherwise. Everything else passes: an update that leaves the spec as
/// it was (status, labels, finalizers: the operator must be able to finish with an
/// Application stored before the webhook existed), an Application being deleted, other
/// operations. Secret configuration values are not read here; the reconcile checks them.
///
/// ```
/// use runnel_operator::admission::{AdmissionContext, AdmissionReview, review};
/// let request: AdmissionReview = serde_json::from_value(serde_json::json!({
///     "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
///     "request": {"uid": "1", "operation": "DELETE"}
/// }))?;
/// let answer = review(request, &AdmissionContext::default());
/// assert!(answer.response.unwrap().allowed);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn review(review: AdmissionReview, context: &AdmissionContext) -> AdmissionReview {
    let request = review.request.unwrap_or_default();
    let verdict = judge(&request, context);
    AdmissionReview {
        api_version: "admission.k8s.io/v1".to_owned(),
        kind: "AdmissionReview".to_owned(),
        request: None,
        response: Some(AdmissionResponse {
            uid: request.uid,
            allowed: verdict.is_ok(),
            status: verdict.err().map(
                |(reason, message)| json!({"code": 422, "reason": reason, "message": message}),
            ),
        }),
    }
}

/// `Ok` to allow; a reason (`Invalid`, `BadRequest`) and a message to refuse.
fn judge(
    request: &AdmissionRequest,
    context: &AdmissionContext,
) -> Result<(), (&'static str, String)> {
    if !matches!(request.operation.as_str(), "CREATE" | "UPDATE") {
        return Ok(());
    }
    let object = request.object.clone().ok_or((
        "BadRequest",
        "the admission request holds no object".to_owned(),
    ))?;
    if object["metadata"]["deletionTimestamp"].is_string() {
        return Ok(());
    }
    if request.operation == "UPDATE"
        && request
            .old_object
            .as_ref()
            .is_some_and(|old| old["spec"] == object["spec"])
    {
        return Ok(());
    }
    let app: Application = serde_json::from_value(object).map_err(|error| {
        (
            "BadRequest",
            format!("the object is not an Application runnel can read: {error}"),
        )
    })?;
    verify(
        &app,
        Secrets::Unknown,
        &context.operator_version,
        context.default_bootstrap_servers.as_deref(),
    )
    .map(drop)
    .map_err(|refusal| {
        (
            "Invalid",
            format!(
                "application '{}' cannot run ({}): {}",
                app.name(),
                refusal.reason,
                refusal.message
            ),
        )
    })
}

#[cfg(test)]
mod tests;
