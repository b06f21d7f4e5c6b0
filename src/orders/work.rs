//! Handler work: an injected sleep standing in for what a real handler does (created 800 ms,
//! an external API call; paid 50 ms, a DB write). Costs are per event type, and an event may
//! carry its own.

use super::EventSpec;
use crate::timeline::Job;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Injected work per job, in ms before `--time-scale`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HandlerWork {
    /// Per event type.
    pub per_type: BTreeMap<String, f64>,
    /// Per event (order, type, version), overriding its type's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_event: Vec<(i64, String, i64, f64)>,
}

impl HandlerWork {
    /// Costs of `per_type`, with the events that carry their own `cost_ms`.
    pub fn new(per_type: &BTreeMap<String, f64>, events: &[EventSpec]) -> HandlerWork {
        let per_event =
            events.iter().filter_map(|e| e.cost_ms.map(|c| (e.order, e.event_type.clone(), e.version, c))).collect();
        HandlerWork { per_type: per_type.clone(), per_event }
    }

    /// Work for one job: its event's own cost, else its type's, else 0.
    pub fn cost_ms(&self, job: &Job) -> f64 {
        self.per_event
            .iter()
            .find(|(o, t, v, _)| *o == job.order && *t == job.event_type && *v == job.version)
            .map(|e| e.3)
            .unwrap_or_else(|| self.of_type(&job.event_type))
    }

    /// Each type's work in ms at time scale `scale` (what a worker from a command line is
    /// told).
    pub fn scaled_costs(&self, scale: crate::fault::TimeScale) -> BTreeMap<String, f64> {
        self.per_type.iter().map(|(t, ms)| (t.clone(), ms * scale.0)).collect()
    }

    pub fn of_type(&self, event_type: &str) -> f64 {
        self.per_type.get(event_type).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_cost_overrides_its_type() {
        let mut slow = EventSpec::new(7, "created", 1);
        slow.cost_ms = Some(200.0);
        let w = HandlerWork::new(&BTreeMap::from([("created".to_string(), 2.0)]), &[slow]);
        assert_eq!(w.cost_ms(&Job::new(7, "created", 1)), 200.0);
        assert_eq!(w.cost_ms(&Job::new(8, "created", 1)), 2.0);
        assert_eq!(w.cost_ms(&Job::new(8, "paid", 2)), 0.0);
    }
}
