//! Which settings hold secrets, so their values are never shown.

/// Whether the value of setting `key` is a secret: passwords, secrets, tokens, credentials
/// and private keys (`sasl.password`, `ssl.key.password`, `sasl.oauthbearer.client.secret`,
/// `ssl.key.pem`, `schema.registry.basic.auth.user.info`, ...). Reports never quote such a
/// value.
///
/// ```
/// use runnel_blueprint::is_secret_setting;
/// assert!(is_secret_setting("sasl.password"));
/// assert!(is_secret_setting("sasl.oauthbearer.client.secret"));
/// assert!(is_secret_setting("schema.registry.basic.auth.user.info"));
/// assert!(!is_secret_setting("security.protocol"));
/// ```
pub fn is_secret_setting(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "password",
        "secret",
        "token",
        "credential",
        "key.pem",
        "oauthbearer.config",
        "user.info",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// `line` with the value masked when it sets a secret (`"sasl.password" = "..."`), and
/// where its key ends; `None` when it sets no secret.
pub(crate) fn masked(line: &str) -> Option<(String, usize)> {
    let (key, _) = line.split_once('=')?;
    let name = key.trim().trim_matches(|c| c == '"' || c == '\'');
    if !is_secret_setting(name) {
        return None;
    }
    Some((format!("{}= \"[redacted]\"", key), key.trim_end().len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_lines_are_masked_and_others_left_alone() {
        assert_eq!(
            masked(r#"  "sasl.password" = "hunter2""#),
            Some((r#"  "sasl.password" = "[redacted]""#.to_owned(), 17))
        );
        assert_eq!(masked("partitions = 3"), None);
        assert_eq!(masked("[topics.a]"), None);
    }
}
