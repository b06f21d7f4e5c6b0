//! The producer of a jobs run (a task of the orchestrator): every job is sent with `XADD`,
//! as many copies as the plan says; where the plan loses the first reply, the producer acts
//! as after a read timeout and sends the job again, at once or after other jobs' sends. With
//! `XADD … IDMP <producer> <job>` (Redis ≥ 8.6) the server answers a resend with the ID it
//! already gave and adds nothing.

use crate::error::{Context, Error};
use crate::handler::job::events::JobEvent;
use crate::labs::idempotency::jobs::plan::JobPlan;
use crate::timeline::vocabulary::Vocabulary as _;
use crate::timeline::{Actor, Sink};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;

/// The producer id `XADD … IDMP` names.
pub const PRODUCER_ID: &str = "producer-1";

/// One send of the producer: (job index, attempt).
pub fn schedule(jobs: &[JobPlan]) -> Vec<(usize, u32)> {
    let mut sends: Vec<(usize, u32)> = Vec::new();
    let mut resends: Vec<(usize, usize)> = Vec::new(); // (due after this many sends, job)
    for (i, j) in jobs.iter().enumerate() {
        for _ in 0..j.copies {
            sends.push((i, 1));
            flush_due(&mut sends, &mut resends);
        }
        if let Some(after) = j.resend_after {
            resends.push((sends.len() + after as usize, i));
            flush_due(&mut sends, &mut resends);
        }
    }
    resends.sort();
    sends.extend(resends.into_iter().map(|(_, i)| (i, 2)));
    sends
}

fn flush_due(sends: &mut Vec<(usize, u32)>, resends: &mut Vec<(usize, usize)>) {
    while let Some(pos) = resends.iter().position(|(due, _)| *due <= sends.len()) {
        let (_, i) = resends.remove(pos);
        sends.push((i, 2));
    }
}

/// Publish every job on `stream` in schedule order; `idmp` sends with `IDMP`.
pub async fn publish(
    mut conn: MultiplexedConnection,
    stream: String,
    jobs: Vec<JobPlan>,
    idmp: bool,
    sink: std::sync::Arc<dyn Sink>,
) -> Result<(), Error> {
    let mut given: HashMap<String, Vec<String>> = HashMap::new();
    for (i, attempt) in schedule(&jobs) {
        let job = &jobs[i];
        let mut cmd = redis::cmd("XADD");
        cmd.arg(&stream);
        if idmp {
            cmd.arg("IDMP").arg(PRODUCER_ID).arg(&job.job);
        }
        let payload = format!(r#"{{"job":"{}","order":{}}}"#, job.job, job.order);
        cmd.arg("*").arg("job").arg(&job.job).arg("payload").arg(payload);
        let entry_id: String = cmd.query_async(&mut conn).await.context("XADD")?;
        let ids = given.entry(job.job.clone()).or_default();
        let same_id = ids.contains(&entry_id);
        ids.push(entry_id.clone());
        let reply_lost = attempt == 1 && job.resend_after.is_some();
        let kind = JobEvent::JobPublished { entry_id, job: job.job.clone(), attempt, reply_lost, same_id }.event();
        sink.emit(Actor::Producer, kind);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::labs::idempotency::jobs::publish::*;

    fn plan(job: &str, copies: u32, resend_after: Option<u32>) -> JobPlan {
        JobPlan {
            job: job.into(),
            crash: None,
            fault: None,
            partner: None,
            partner_effect: None,
            copies,
            resend_after,
            order: 42,
        }
    }

    #[test]
    fn copies_and_resends_take_their_place_in_the_schedule() {
        let jobs =
            [plan("a", 1, Some(0)), plan("b", 2, None), plan("c", 1, Some(2)), plan("d", 1, None), plan("e", 1, None)];
        // a, a again at once, b twice, c, then two more sends (d, e) before c again.
        assert_eq!(schedule(&jobs), [(0, 1), (0, 2), (1, 1), (1, 1), (2, 1), (3, 1), (4, 1), (2, 2)]);
    }

    #[test]
    fn a_late_resend_with_nothing_after_it_still_happens() {
        assert_eq!(schedule(&[plan("a", 1, Some(5))]), [(0, 1), (0, 2)]);
    }
}
