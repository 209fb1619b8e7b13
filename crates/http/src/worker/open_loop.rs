//! Open loop: arrivals issued by the schedule wait in the backlog until a
//! connection slot is free; a free slot takes the oldest waiting request.

use super::{Phase, Worker};

impl Worker<'_> {
    /// Open loop: issues every arrival now due and hands waiting requests to
    /// free connections, oldest first.
    pub(super) fn dispatch(&mut self, now: u64) {
        let Some(s) = self.schedule.as_mut() else {
            return;
        };
        while s.peek() <= now && self.quota.is_none_or(|q| s.issued() < q) {
            self.backlog.push_back(s.take());
        }
        while !self.backlog.is_empty() {
            let Some(i) = self.idle.pop() else {
                break;
            };
            if self.conns[i].phase != Phase::Ready {
                continue; // stale entry: the slot was reused meanwhile
            }
            let t = self.backlog.pop_front().expect("checked non-empty");
            self.start(i, t, now);
        }
    }

    /// Open loop: starts the request intended for `intended` on slot `i`.
    pub(super) fn start(&mut self, i: usize, intended: u64, now: u64) {
        self.conns[i].intended = Some(intended);
        if self.plan.keepalive {
            self.send(i, now);
        } else {
            self.open(i, now);
        }
    }

    /// Open loop: slot `i` is free; it takes the oldest waiting request or
    /// waits for the schedule.
    pub(super) fn make_ready(&mut self, i: usize, now: u64) {
        if let Some(t) = self.backlog.pop_front() {
            return self.start(i, t, now);
        }
        self.conns[i].phase = Phase::Ready;
        self.idle.push(i);
    }
}
