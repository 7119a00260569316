//! The admission webhook's TLS material: a certificate authority of its own and a serving
//! certificate it signs, made fresh by `runnel operator manifests`.

use std::time::{SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use runnel_operator::manifests::Webhook;

/// How many years the certificates are valid; `runnel operator manifests` again makes new
/// ones (and rolls the operator's pods).
const VALID_YEARS: i32 = 10;

/// A new certificate authority, trusted by the API server for this webhook alone, and a
/// serving certificate for `names` (DNS names or IP addresses) signed by it.
pub(crate) fn webhook(names: Vec<String>, url: Option<String>) -> anyhow::Result<Webhook> {
    let year = 1970 + (SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() / 31_556_952) as i32;
    let mut authority = CertificateParams::new(Vec::<String>::new())?;
    authority.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    authority
        .distinguished_name
        .push(DnType::CommonName, "runnel-operator webhook authority");
    authority.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    authority.not_after = rcgen::date_time_ymd(year + VALID_YEARS, 1, 1);
    let authority_key = KeyPair::generate()?;
    let authority_certificate = authority.self_signed(&authority_key)?;

    let mut serving = CertificateParams::new(names)?;
    serving
        .distinguished_name
        .push(DnType::CommonName, runnel_operator::manifests::WEBHOOK);
    serving.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.not_after = rcgen::date_time_ymd(year + VALID_YEARS, 1, 1);
    let key = KeyPair::generate()?;
    let issuer = Issuer::new(authority, authority_key);
    let certificate = serving.signed_by(&key, &issuer)?;
    Ok(Webhook {
        certificate: certificate.pem(),
        key: key.serialize_pem(),
        certificate_authority: authority_certificate.pem(),
        url,
    })
}
