//! The validating admission webhook's HTTPS server: `POST /validate` with an
//! `AdmissionReview`, answered by [`crate::admission::review`].
//!
//! The API server calls webhooks over TLS only; the certificate and key are PEM files (in a
//! cluster, the Secret that `runnel operator manifests` writes, mounted into the operator's
//! pods), loaded once at the start: the manifests roll the operator's pods when they change.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::admission::{AdmissionContext, AdmissionReview, review};

/// The path the API server posts reviews to.
pub const PATH: &str = "/validate";

/// The largest review read: the API server's own limit on a request is 3 MiB, and a review
/// holds the object twice (new and old).
const MAX_REVIEW_BYTES: usize = 8 * 1024 * 1024;

/// Where the webhook's TLS certificate (with its chain) and private key are, PEM.
#[derive(Clone, Debug)]
pub struct WebhookTls {
    /// The certificate file (`tls.crt`).
    pub certificate: PathBuf,
    /// The private key file (`tls.key`).
    pub key: PathBuf,
}

/// The webhook's certificate or key could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("loading the webhook's {what} from {path} failed")]
pub struct TlsError {
    /// `certificate` or `key`.
    pub what: &'static str,
    /// The PEM file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl WebhookTls {
    /// The TLS acceptor for these files (HTTP/1.1).
    fn acceptor(&self) -> Result<TlsAcceptor, TlsError> {
        let failed = |what, path: &Path| {
            let path = path.to_owned();
            move |source: Box<dyn std::error::Error + Send + Sync>| TlsError { what, path, source }
        };
        let chain = CertificateDer::pem_file_iter(&self.certificate)
            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
            .map_err(|error| failed("certificate", &self.certificate)(error.into()))?;
        if chain.is_empty() {
            return Err(failed("certificate", &self.certificate)(
                "the file holds no certificate".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|error| failed("key", &self.key)(error.into()))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| failed("certificate", &self.certificate)(error.into()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|error| failed("key", &self.key)(error.into()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// Serves the admission webhook on `listener` until `stop`: `POST /validate` takes an
/// `AdmissionReview` and answers with the verdict; anything else is a 404 or 405.
///
/// # Errors
///
/// When the certificate or the key cannot be loaded. A connection that fails (a bad
/// handshake, a client gone) is logged and the server goes on.
pub async fn serve(
    listener: TcpListener,
    tls: WebhookTls,
    context: AdmissionContext,
    stop: CancellationToken,
) -> Result<(), Error> {
    let acceptor = tls.acceptor()?;
    let context = Arc::new(context);
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!("the admission webhook could not accept a connection: {error}");
                    continue;
                }
            },
        };
        let (acceptor, context, stop) = (acceptor.clone(), context.clone(), stop.clone());
        tokio::spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(stream) => stream,
                Err(error) => {
                    tracing::warn!("admission webhook: TLS handshake with {peer} failed: {error}");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |request| {
                let context = context.clone();
                async move { Ok::<_, Infallible>(answer(request, &context).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                () = stop.cancelled() => {}
                served = connection => if let Err(error) = served {
                    tracing::debug!("admission webhook: connection from {peer} ended: {error}");
                },
            }
        });
    }
}

/// The answer to one HTTP request.
async fn answer(request: Request<Incoming>, context: &AdmissionContext) -> Response<Full<Bytes>> {
    if request.uri().path() != PATH {
        return plain(
            StatusCode::NOT_FOUND,
            format!("not found: only POST {PATH}"),
        );
    }
    if request.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, format!("only POST {PATH}"));
    }
    let body = match Limited::new(request.into_body(), MAX_REVIEW_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                format!("reading the review failed: {error}"),
            );
        }
    };
    let asked: AdmissionReview = match serde_json::from_slice(&body) {
        Ok(asked) => asked,
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                format!("the body is not an AdmissionReview: {error}"),
            );
        }
    };
    let verdict = review(asked, context);
    if let Some(response) = &verdict.response
        && !response.allowed
    {
        tracing::info!(
            "admission webhook refused an application: {}",
            response
                .status
                .as_ref()
                .map_or_else(String::new, |status| status["message"].to_string())
        );
    }
    let body = serde_json::to_vec(&verdict).expect("a review serializes");
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response")
}

fn plain(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(message)))
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_certificate_stops_the_webhook_with_the_files_name() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tls = WebhookTls {
            certificate: PathBuf::from("/nonexistent/tls.crt"),
            key: PathBuf::from("/nonexistent/tls.key"),
        };
        let error = serve(
            listener,
            tls,
            AdmissionContext::default(),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "loading the webhook's certificate from /nonexistent/tls.crt failed"
        );
    }
}
