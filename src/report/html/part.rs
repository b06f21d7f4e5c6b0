//! A part of the lab book: what a lab's figures (or an exploration's classes) hold, as a
//! script the page loads when they are needed — `ordlabBook.part("lock", {slot: html, …})` —
//! so the page itself stays light. A script element, not a request for data: it loads from
//! `file://` as from `ordlab serve`.

use super::figure::Slot;

/// The folder of the parts beside `index.html`.
pub const DIR: &str = "book";

/// Where the part named `name` lives, relative to `index.html`.
pub fn lab_script(name: &str) -> String {
    format!("{DIR}/{name}.js")
}

/// Where lab `id`'s page of its own lives, relative to `index.html`.
pub fn standalone_path(id: &str) -> String {
    format!("{DIR}/{id}.html")
}

/// The part's script: its slots as one JSON object handed to the page.
pub fn script(name: &str, slots: &[Slot]) -> String {
    let map: serde_json::Map<String, serde_json::Value> =
        slots.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone()))).collect();
    let name = serde_json::Value::String(name.to_string());
    format!(
        "// ordlab lab book: a part the page loads when it is needed (see index.html).\nordlabBook.part({name}, {});\n",
        serde_json::Value::Object(map)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_one_call_with_its_slots() {
        let s = script("lock", &[("fig-lock-s4c".into(), "<svg>\"</svg>".into())]);
        assert!(s.contains(r#"ordlabBook.part("lock", {"fig-lock-s4c":"<svg>\"</svg>"});"#), "{s}");
        assert_eq!(lab_script("lock"), "book/lock.js");
    }
}
