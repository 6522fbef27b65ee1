//! `--command-config FILE`: a properties file in Kafka's format (`key=value` lines, `#` and `!`
//! comments), as Kafka's tools take one. For the client commands its properties apply as if
//! given with `--property`, before them; for the admin commands only the security settings
//! (`security.protocol`, `ssl.*`, `sasl.*`), which secure their broker connections.

use std::path::Path;

use gregor_net::Security;

use crate::error::CliError;

/// Reads a properties file: one `key=value` (or `key:value`, or `key value`) per line, blank
/// lines and lines starting with `#` or `!` skipped, a line ending in `\` continued on the
/// next; keys and values trimmed. Values are not printed in errors (they may be passwords).
pub(crate) fn read_file(path: &Path) -> Result<Vec<(String, String)>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("could not read --command-config {}", path.display()), e))?;
    Ok(parse(&text))
}

/// The properties of a file's text (see [`read_file`]).
pub(crate) fn parse(text: &str) -> Vec<(String, String)> {
    let mut props = Vec::new();
    let mut logical = String::new();
    for line in text.lines() {
        let line = line.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => {
                logical.push_str(start);
                continue;
            }
            None => logical.push_str(line),
        }
        let entry = std::mem::take(&mut logical);
        let at = entry.find(['=', ':']).or_else(|| entry.find(char::is_whitespace));
        let (key, value) = match at {
            Some(i) => (&entry[..i], &entry[i + 1..]),
            None => (entry.as_str(), ""),
        };
        props.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    if !logical.is_empty() {
        let (key, value) = logical.split_once(['=', ':']).unwrap_or((logical.as_str(), ""));
        props.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    props
}

/// The `--command-config` file's properties followed by the `--property` values (which win).
pub(crate) fn with_file(
    file: Option<&Path>,
    properties: &[(String, String)],
) -> Result<Vec<(String, String)>, CliError> {
    let mut props = match file {
        Some(path) => read_file(path)?,
        None => Vec::new(),
    };
    props.extend(properties.iter().cloned());
    Ok(props)
}

/// The security settings of an admin command's `--command-config` file (plaintext without
/// one).
pub(crate) fn security(file: Option<&Path>) -> Result<Security, CliError> {
    let Some(path) = file else { return Ok(Security::plaintext()) };
    let props = read_file(path)?;
    if let Some((name, _)) = props.iter().find(|(name, _)| !Security::is_security_property(name)) {
        return Err(CliError::usage(format!("invalid --command-config {}", path.display()), NotSecurity(name.clone())));
    }
    Security::from_properties(props)
        .map_err(|e| CliError::usage(format!("invalid security settings in --command-config {}", path.display()), e))
}

/// A property of an admin command's `--command-config` that is not a security setting.
#[derive(Debug)]
struct NotSecurity(String);

impl std::fmt::Display for NotSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a security setting: only security.protocol, ssl.* and sasl.* apply to this command",
            self.0
        )
    }
}

impl std::error::Error for NotSecurity {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_as_kafkas_tools_read_them() {
        let text = "# TLS to the brokers\n\
                    security.protocol = SSL\n\
                    ! another comment\n\
                    \n\
                    ssl.ca.location:/etc/kafka/ca.pem\n\
                    sasl.username alice\n\
                    ssl.endpoint.identification.algorithm=\n\
                    ssl.ca.pem=-----BEGIN CERTIFICATE-----\\\n  MIIB\\\n  -----END CERTIFICATE-----\n\
                    client.id=a=b\n";
        let props = parse(text);
        let expected = [
            ("security.protocol", "SSL"),
            ("ssl.ca.location", "/etc/kafka/ca.pem"),
            ("sasl.username", "alice"),
            ("ssl.endpoint.identification.algorithm", ""),
            ("ssl.ca.pem", "-----BEGIN CERTIFICATE-----MIIB-----END CERTIFICATE-----"),
            ("client.id", "a=b"),
        ];
        assert_eq!(props, expected.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }

    #[test]
    fn the_flags_win_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.properties");
        std::fs::write(&path, "client.id=file\nsecurity.protocol=PLAINTEXT\n").unwrap();
        let props = with_file(Some(&path), &[("client.id".into(), "flag".into())]).unwrap();
        assert_eq!(props.last().unwrap(), &("client.id".to_owned(), "flag".to_owned()));
        assert_eq!(props.len(), 3);
        assert!(with_file(Some(&dir.path().join("missing")), &[]).is_err());
    }

    #[test]
    fn admin_files_hold_security_settings_only_and_never_echo_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.properties");
        std::fs::write(&path, "security.protocol=ssl\nenable.ssl.certificate.verification=false\n").unwrap();
        assert!(security(Some(&path)).unwrap().tls().is_some());
        assert_eq!(security(None).unwrap(), Security::plaintext());
        std::fs::write(&path, "security.protocol=SSL\nrequest.timeout.ms=1000\n").unwrap();
        let e = crate::error::chain(&security(Some(&path)).unwrap_err());
        assert!(e.contains("\"request.timeout.ms\" is not a security setting"), "{e}");
        std::fs::write(&path, "sasl.password=hunter2\n").unwrap();
        let e = crate::error::chain(&security(Some(&path)).unwrap_err());
        assert!(e.contains("for sasl.password: needs security.protocol SASL_PLAINTEXT or SASL_SSL"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}
