//! Asking a running server what it is: versions and which Redis commands exist.
//! Also `redact_url`, used wherever a URL may reach a message or a log.

use super::error::ServiceError;
use super::RedisCapabilities;

/// Returns the Redis version (from `INFO server`) and which optional commands exist.
pub async fn probe_redis(url: &str) -> Result<(String, RedisCapabilities), ServiceError> {
    let unreachable =
        |e: redis::RedisError| ServiceError::Unreachable { what: "redis", url: redact_url(url), source: Box::new(e) };
    let client = redis::Client::open(url).map_err(unreachable)?;
    let mut con = client.get_multiplexed_async_connection().await.map_err(unreachable)?;
    let info: String = redis::cmd("INFO").arg("server").query_async(&mut con).await.map_err(unreachable)?;
    let version = info_field(&info, "redis_version").unwrap_or_default();
    let names = ["delex", "xautoclaim", "blmove", "bzpopmax", "xackdel"];
    let replies: Vec<redis::Value> =
        redis::cmd("COMMAND").arg("INFO").arg(&names[..]).query_async(&mut con).await.map_err(unreachable)?;
    let has = |i: usize| !matches!(replies.get(i), None | Some(redis::Value::Nil));
    let caps = RedisCapabilities {
        delex: has(0),
        xautoclaim: has(1),
        blmove: has(2),
        bzpopmax: has(3),
        xackdel: has(4),
        xadd_idmp: version_at_least(&version, (8, 6)),
    };
    Ok((version, caps))
}

/// Returns PostgreSQL's `server_version`.
pub async fn probe_postgres(conn: &str) -> Result<String, ServiceError> {
    let unreachable = |e: tokio_postgres::Error| ServiceError::Unreachable {
        what: "postgres",
        url: redact_url(conn),
        source: Box::new(e),
    };
    let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls).await.map_err(unreachable)?;
    let task = tokio::spawn(connection);
    let row = client.query_one("SHOW server_version", &[]).await;
    drop(client);
    let _ = task.await;
    Ok(row.map_err(unreachable)?.get(0))
}

fn info_field(info: &str, key: &str) -> Option<String> {
    info.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(|v| v.trim().to_string())
}

/// True when `version` ("8.6.1", "15.4 (Debian ...)") is at least `(major, minor)`.
pub(crate) fn version_at_least(version: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = version.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().unwrap_or(0));
    let got = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    got >= (major, minor)
}

/// Hides any password in a URL (`redis://:secret@h:1/` -> `redis://:***@h:1/`,
/// `?password=x`) or in a key=value connection string (`password=x`).
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let auth_start = scheme_end + 3;
        let auth_end = out[auth_start..].find(['/', '?', '#']).map_or(out.len(), |i| auth_start + i);
        if let Some(at) = out[auth_start..auth_end].rfind('@') {
            let userinfo = &out[auth_start..auth_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(auth_start + colon + 1..auth_start + at, "***");
            }
        }
    }
    redact_password_params(&out)
}

/// Replaces the value of every `password=` parameter (key=value or query form).
fn redact_password_params(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(off) = lower[i..].find("password") {
        let key = i + off;
        let boundary = key == 0 || matches!(s.as_bytes()[key - 1], b' ' | b'\t' | b'?' | b'&');
        let mut j = key + "password".len();
        while s[j..].starts_with(' ') {
            j += 1;
        }
        if !boundary || !s[j..].starts_with('=') {
            out.push_str(&s[i..j]);
            i = j;
            continue;
        }
        j += 1;
        while s[j..].starts_with(' ') {
            j += 1;
        }
        out.push_str(&s[i..j]);
        out.push_str("***");
        i = value_end(s, j);
    }
    out.push_str(&s[i..]);
    out
}

/// End of a parameter value starting at `start` (quoted with `\'` escapes, or bare).
fn value_end(s: &str, start: usize) -> usize {
    let bytes = s.as_bytes();
    if bytes.get(start) == Some(&b'\'') {
        let mut k = start + 1;
        while k < bytes.len() {
            match bytes[k] {
                b'\\' => k += 2,
                b'\'' => return k + 1,
                _ => k += 1,
            }
        }
        return bytes.len();
    }
    s[start..].find([' ', '\t', '&', '#']).map_or(s.len(), |k| start + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_url_passwords() {
        assert_eq!(redact_url("redis://:secret@h:1/"), "redis://:***@h:1/");
        assert_eq!(redact_url("redis://u:p@ss@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(
            redact_url("postgres://app:pw@db:5432/x?sslmode=disable"),
            "postgres://app:***@db:5432/x?sslmode=disable"
        );
        assert_eq!(redact_url("postgresql://db/x?user=a&password=pw&x=1"), "postgresql://db/x?user=a&password=***&x=1");
    }

    #[test]
    fn leaves_urls_without_password_alone() {
        for u in ["redis://127.0.0.1:6379/", "postgres://app@db/x", "redis://h/#frag@x"] {
            assert_eq!(redact_url(u), u);
        }
    }

    #[test]
    fn redacts_key_value_passwords() {
        assert_eq!(redact_url("host=h password=secret user=u"), "host=h password=*** user=u");
        assert_eq!(redact_url("password = 'a b\\'c' port=1"), "password = *** port=1");
        assert_eq!(redact_url("host=h PASSWORD=x"), "host=h PASSWORD=***");
        assert_eq!(redact_url("host=h passwordfile=x"), "host=h passwordfile=x");
        assert_eq!(redact_url("host=mypassword=1"), "host=mypassword=1");
    }

    #[test]
    fn versions_compare() {
        assert!(version_at_least("8.6.0", (8, 6)));
        assert!(version_at_least("9.0", (8, 6)));
        assert!(!version_at_least("8.4.2", (8, 6)));
        assert!(!version_at_least("7.0.15", (8, 6)));
        assert!(!version_at_least("", (8, 6)));
    }

    #[test]
    fn info_fields_parse() {
        let info = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n";
        assert_eq!(info_field(info, "redis_version").as_deref(), Some("7.0.15"));
        assert_eq!(info_field(info, "nope"), None);
    }
}
