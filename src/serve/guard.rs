//! Which requests `ordlab serve` answers: only its own page's. A request must name this server
//! in its `Host` (so a DNS-rebound name reaches nothing), and one that changes anything must
//! come from this server's origin and carry the token embedded in the page it served.
//!
//! The token is drawn when the server starts and written into the page as
//! `<meta name="ordlab-token">`; the page's script sends it back in [`TOKEN_HEADER`]. Another
//! site cannot read the page (no CORS header is ever sent, and a rebound name fails the `Host`
//! check), and a custom header on a cross-origin request needs a preflight that this server
//! never grants; a form or `text/plain` POST, which a browser sends without one, carries
//! neither a matching `Origin` nor the token. Everything else is a [`Refusal`]: 403, one line.

use hyper::http::{HeaderMap, Method};

/// The header the page's script sends the token in.
pub const TOKEN_HEADER: &str = "x-ordlab-token";

/// What `ordlab serve` accepts: the names it is reached by, the origins its page has, and the
/// page's token.
pub struct Guard {
    /// `127.0.0.1:<port>` and `localhost:<port>`.
    hosts: Vec<String>,
    /// `http://` and each host.
    origins: Vec<String>,
    token: String,
}

/// A request refused, and why, in one line.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Guard {
    /// The guard of a server listening on 127.0.0.1:`port`, its page holding `token`.
    pub fn new(port: u16, token: String) -> Guard {
        let hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}")];
        let origins = hosts.iter().map(|h| format!("http://{h}")).collect();
        Guard { hosts, origins, token }
    }

    /// A fresh random token, 128 bits in hex.
    pub fn new_token() -> String {
        format!("{:032x}", rand::random::<u128>())
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The page's `<meta>` element holding the token, for its script to read.
    pub fn meta_tag(&self) -> String {
        format!("<meta name=\"ordlab-token\" content=\"{}\">", self.token)
    }

    /// Ok for a request this server's own page makes; otherwise what is refused and why.
    pub fn check(&self, method: &Method, path: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        let header = |name: &str| headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let what = format!("{method} {path}");
        let expected = self.hosts.join(" or ");
        let host = header("host");
        if !host.as_ref().is_some_and(|host| self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))) {
            let named = host.map_or("no Host header".to_string(), |h| format!("Host {h:?} is not this server"));
            let why = format!("{what}: {named} (expected {expected}; another name can be a DNS rebinding)");
            return Err(Refusal(why));
        }
        let origin = header("origin");
        let safe = matches!(*method, Method::GET | Method::HEAD);
        let origins = self.origins.join(" or ");
        match origin {
            Some(o) if !self.origins.iter().any(|mine| mine.eq_ignore_ascii_case(&o)) => {
                return Err(Refusal(format!("{what}: Origin {o:?} is another site's (this page is {origins})")))
            }
            None if !safe => {
                return Err(Refusal(format!(
                    "{what}: no Origin header (a request that changes anything must come from {origins})"
                )))
            }
            _ => {}
        }
        if safe {
            return Ok(());
        }
        match header(TOKEN_HEADER) {
            None => Err(Refusal(format!(
                "{what}: no {TOKEN_HEADER} header (the page's own script sends the token it was served)"
            ))),
            Some(t) if !same_bytes(t.as_bytes(), self.token.as_bytes()) => Err(Refusal(format!(
                "{what}: wrong {TOKEN_HEADER} (not the token this server's page holds: reload the page)"
            ))),
            Some(_) => Ok(()),
        }
    }
}

/// Equal, compared in time that does not depend on where they differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    fn guard() -> Guard {
        Guard::new(8123, "abc123".into())
    }

    #[test]
    fn the_page_is_served_by_either_name_without_an_origin() {
        let g = guard();
        for host in ["127.0.0.1:8123", "localhost:8123", "LOCALHOST:8123"] {
            assert_eq!(g.check(&Method::GET, "/", &headers(&[("host", host)])), Ok(()), "{host}");
        }
        let same_origin = headers(&[("host", "127.0.0.1:8123"), ("origin", "http://127.0.0.1:8123")]);
        assert_eq!(g.check(&Method::GET, "/", &same_origin), Ok(()));
    }

    #[test]
    fn a_foreign_or_missing_host_is_refused() {
        let g = guard();
        for host in ["evil.example", "evil.example:8123", "127.0.0.1", "127.0.0.1:8124", "localhost"] {
            let Err(Refusal(why)) = g.check(&Method::GET, "/", &headers(&[("host", host)])) else { panic!("{host}") };
            assert!(why.starts_with("GET /: Host ") && why.contains("DNS rebinding"), "{why}");
        }
        let Err(Refusal(why)) = g.check(&Method::GET, "/", &HeaderMap::new()) else { panic!() };
        assert!(why.starts_with("GET /: no Host header (expected 127.0.0.1:8123 or localhost:8123"), "{why}");
    }

    #[test]
    fn a_post_needs_this_origin_and_the_token() {
        let g = guard();
        let post = |pairs: &[(&'static str, &str)]| {
            let mut all = vec![("host", "127.0.0.1:8123")];
            all.extend_from_slice(pairs);
            g.check(&Method::POST, "/run", &headers(&all)).map_err(|Refusal(why)| why)
        };
        let own = [("origin", "http://localhost:8123"), (TOKEN_HEADER, "abc123")];
        assert_eq!(post(&own), Ok(()));
        let foreign = post(&[("origin", "http://evil.example"), (TOKEN_HEADER, "abc123")]).unwrap_err();
        assert!(foreign.contains(r#"Origin "http://evil.example" is another site's"#), "{foreign}");
        let other_port = post(&[("origin", "http://127.0.0.1:9999"), (TOKEN_HEADER, "abc123")]).unwrap_err();
        assert!(other_port.contains("another site's"), "{other_port}");
        assert!(post(&[(TOKEN_HEADER, "abc123")]).unwrap_err().contains("no Origin header"));
        let none = post(&[("origin", "http://127.0.0.1:8123")]).unwrap_err();
        assert!(none.contains("no x-ordlab-token header"), "{none}");
        for wrong in ["abc124", "abc12", ""] {
            let why = post(&[("origin", "http://127.0.0.1:8123"), (TOKEN_HEADER, wrong)]).unwrap_err();
            assert!(why.contains("wrong x-ordlab-token"), "{wrong}: {why}");
        }
        // A GET from another site's script is refused too, though it could not read the answer.
        let get =
            g.check(&Method::GET, "/", &headers(&[("host", "127.0.0.1:8123"), ("origin", "http://evil.example")]));
        assert!(get.is_err());
    }

    #[test]
    fn every_refusal_is_one_line() {
        let g = guard();
        for h in [headers(&[("host", "evil.example")]), headers(&[("host", "127.0.0.1:8123")])] {
            let why = g.check(&Method::DELETE, "/run", &h).unwrap_err().0;
            assert!(!why.contains('\n') && why.starts_with("DELETE /run: "), "{why}");
        }
        assert_eq!(Guard::new_token().len(), 32);
        assert_ne!(Guard::new_token(), Guard::new_token());
    }
}
