//! Durations in a set-up are never negative. Every duration key of every lab kind ends in
//! `_ms` (`at_ms`, `cost_ms = { created = 800 }`, `kill_between_ms = [a, b]`), so one walk over
//! the merged set-up finds a negative one wherever it is, before any kind parses it.

/// The key path of the first negative number under a `*_ms` key, and the line saying so.
pub fn first_negative(setup: &toml::Table) -> Option<(Vec<String>, String)> {
    let mut path = Vec::new();
    walk_table(setup, None, &mut path)
}

/// `duration`: the `*_ms` key the values are under, if any.
fn walk_table(table: &toml::Table, duration: Option<&str>, path: &mut Vec<String>) -> Option<(Vec<String>, String)> {
    for (key, value) in table {
        path.push(key.clone());
        let under = duration.or(key.ends_with("_ms").then_some(key.as_str()));
        if let Some(found) = walk_value(value, under, path) {
            return Some(found);
        }
        path.pop();
    }
    None
}

fn walk_value(value: &toml::Value, duration: Option<&str>, path: &mut Vec<String>) -> Option<(Vec<String>, String)> {
    let negative = match value {
        toml::Value::Integer(n) => (*n < 0).then(|| n.to_string()),
        toml::Value::Float(x) => (*x < 0.0).then(|| x.to_string()),
        toml::Value::Table(t) => return walk_table(t, duration, path),
        toml::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                if let Some(found) = walk_value(item, duration, path) {
                    return Some(found);
                }
                path.pop();
            }
            return None;
        }
        _ => None,
    };
    let (key, n) = (duration?, negative?);
    Some((path.clone(), format!("{key} = {n}: a duration cannot be negative: use 0 or more milliseconds")))
}
