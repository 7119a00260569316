//! [`Error`]: why a reconcile or the operator failed.

/// Why reconciling an Application, or running the operator, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading objects of an Application failed.
    #[error("reading the {what} of application '{app}' failed")]
    Read {
        /// `namespace/name`.
        app: String,
        /// What was read.
        what: &'static str,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Applying an object failed.
    #[error("applying {object} of application '{app}' failed")]
    Apply {
        /// `namespace/name`.
        app: String,
        /// `Kind name`.
        object: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Deleting an object the operator no longer wants failed.
    #[error("deleting {object} of application '{app}' failed")]
    Delete {
        /// `namespace/name`.
        app: String,
        /// `Kind name`.
        object: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Writing the status failed.
    #[error("writing the status of application '{app}' failed")]
    Status {
        /// `namespace/name`.
        app: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The spec cannot be carried out; the status and an Event say why.
    #[error("application '{app}' cannot be carried out: {message}")]
    Rejected {
        /// `namespace/name`.
        app: String,
        /// Why.
        message: String,
    },
    /// The leader lease could not be read or written.
    #[error("the leader lease {namespace}/{name} could not be {action}")]
    Lease {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// `read`, `created`, `renewed`, `released`.
        action: &'static str,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// This replica stopped leading while reconciling `app`: it writes nothing more.
    #[error("stopped reconciling application {app}: this replica no longer holds the leader lease")]
    Deposed {
        /// `namespace/name`.
        app: String,
    },
    /// Another replica took the lease over (this one failed to renew in time).
    #[error("lost the leader lease {namespace}/{name} to {holder}")]
    LostLease {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Who holds it now.
        holder: String,
    },
    /// The admission webhook's certificate or key could not be loaded.
    #[error(transparent)]
    WebhookTls(#[from] crate::webhook::TlsError),
}

impl Error {
    /// A short, stable label for logs and metrics: the variant.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Read { .. } => "read",
            Error::Apply { .. } => "apply",
            Error::Delete { .. } => "delete",
            Error::Status { .. } => "status",
            Error::Rejected { .. } => "rejected",
            Error::Lease { .. } => "lease",
            Error::LostLease { .. } => "lost_lease",
            Error::Deposed { .. } => "deposed",
            Error::WebhookTls(_) => "webhook_tls",
        }
    }
}
