//! Decoding request bodies into the outlet's value type, and saying which field is wrong;
//! [`Validation`], the user's check of a decoded value, says it with the same [`Invalid`].

use std::fmt;

use serde::de::DeserializeOwned;

/// Why a request body (or one line of a newline-delimited body) was refused: the field at
/// fault, when there is one, and what is wrong with it. The ingress answers `400 Bad
/// Request` with both.
///
/// Return it from a [validation](crate::HttpIngress::validate) function:
///
/// ```
/// use runnel_http::Invalid;
/// let invalid = Invalid::field("amount", "must not be negative");
/// assert_eq!(invalid.to_string(), "field 'amount': must not be negative");
/// assert_eq!(invalid.field_path(), Some("amount"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    field: Option<String>,
    reason: String,
}

impl Invalid {
    /// The field at `path` (`amount`, `merchant.category`, `items[2].price`) is wrong.
    pub fn field(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Invalid {
            field: Some(path.into()),
            reason: reason.into(),
        }
    }

    /// The body as a whole is wrong (it is not JSON, say).
    pub fn body(reason: impl Into<String>) -> Self {
        Invalid {
            field: None,
            reason: reason.into(),
        }
    }

    /// The path of the field at fault, if one is.
    pub fn field_path(&self) -> Option<&str> {
        self.field.as_deref()
    }

    /// What is wrong.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "field '{field}': {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for Invalid {}

/// A check of a decoded value beyond its type; an [`Invalid`] refuses the request.
pub type Validation<T> = fn(&T) -> std::result::Result<(), Invalid>;

/// Decodes one JSON value of type `T` from `bytes`; nothing but whitespace may follow it.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Invalid> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        invalid(&path, error.into_inner())
    })?;
    deserializer
        .end()
        .map_err(|error| Invalid::body(format!("the body is not one JSON value: {error}")))?;
    Ok(value)
}

/// The [`Invalid`] of a decoding error at `path` (`.` for the top level).
fn invalid(path: &str, error: serde_json::Error) -> Invalid {
    let message = error.to_string();
    if error.is_syntax() || error.is_eof() {
        return Invalid::body(format!("the body is not valid JSON: {message}"));
    }
    // serde names a missing field in its message, at the path of the struct that lacks it.
    if let Some(missing) = missing_field(&message) {
        let field = if path == "." {
            missing.to_owned()
        } else {
            format!("{path}.{missing}")
        };
        return Invalid::field(field, message);
    }
    if path == "." {
        Invalid::body(message)
    } else {
        Invalid::field(path, message)
    }
}

/// The field of serde's "missing field `name`" message.
fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Merchant {
        id: String,
        category: String,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Payment {
        card: String,
        amount: f64,
        merchant: Merchant,
    }

    const GOOD: &str =
        r#"{"card": "c-1", "amount": 12.5, "merchant": {"id": "m-1", "category": "food"}}"#;

    #[test]
    fn a_good_body_decodes() {
        let payment: Payment = decode(GOOD.as_bytes()).unwrap();
        assert_eq!(payment.amount, 12.5);
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let body = GOOD.replace("12.5", "\"twelve\"");
        let invalid = decode::<Payment>(body.as_bytes()).unwrap_err();
        assert_eq!(invalid.field_path(), Some("amount"));
        assert!(
            invalid
                .reason()
                .contains("invalid type: string \"twelve\", expected f64"),
            "{invalid}"
        );
    }

    #[test]
    fn a_missing_field_is_named_with_its_path() {
        let invalid = decode::<Payment>(br#"{"amount": 1.0}"#).unwrap_err();
        assert_eq!(invalid.field_path(), Some("card"));
        let body = GOOD.replace(r#""category": "food""#, r#""kind": "food""#);
        let invalid = decode::<Payment>(body.as_bytes()).unwrap_err();
        assert_eq!(invalid.field_path(), Some("merchant.category"));
        assert_eq!(
            invalid.to_string(),
            "field 'merchant.category': missing field `category` at line 1 column 73"
        );
    }

    #[test]
    fn broken_json_and_trailing_text_are_about_the_body() {
        let invalid = decode::<Payment>(b"{\"card\": ").unwrap_err();
        assert_eq!(invalid.field_path(), None);
        assert!(invalid.reason().starts_with("the body is not valid JSON"));
        let trailing = format!("{GOOD} {GOOD}");
        let invalid = decode::<Payment>(trailing.as_bytes()).unwrap_err();
        assert!(
            invalid
                .reason()
                .starts_with("the body is not one JSON value")
        );
        let invalid = decode::<Payment>(b"\"a payment\"").unwrap_err();
        assert_eq!(invalid.field_path(), None);
        assert!(
            invalid.reason().contains("expected struct Payment"),
            "{invalid}"
        );
    }
}
