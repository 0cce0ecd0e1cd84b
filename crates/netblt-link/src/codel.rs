//! CoDel (RFC 8289), decided when a packet is offered.
//!
//! RFC 8289 decides at dequeue, from each packet's sojourn time (arrival to
//! dequeue) and whether it has stayed above `TARGET` for an `INTERVAL`. Our
//! [`crate::Link`] decides each packet's whole fate when it is offered, and
//! its queue is FIFO with a transmitter whose free time is known: the time
//! a packet will reach the head (its dequeue time `d`) and so its sojourn
//! `d - now` are already known at the offer, and packets reach the head in
//! offer order. So we run RFC 8289's dequeue-side state machine here, once
//! per packet, at the packet's own dequeue time. A packet CoDel drops does
//! not use the transmitter, so the next packet reaches the head at the same
//! instant, exactly as in the RFC's drop loop.
//!
//! One input differs. The RFC's pseudocode (§5) does not drop while the
//! queue holds at most one maximum-size packet (`queue_.bytes() <= maxpacket_`):
//! the bytes that will be behind the packet when it leaves are not known at
//! its offer, so we use the bytes ahead of it when it arrived, which equal
//! them in a standing queue (decision S2).

use core::time::Duration;

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// RFC 8289's per-queue state (§5.1 `codel_queue_t`).
#[derive(Clone, Debug)]
pub(crate) struct Codel {
    target: u64,
    interval: u64,
    /// "Time when we'll declare we're above target (0 if below)".
    first_above_time: u64,
    /// "Time to drop next packet".
    drop_next: u64,
    /// "Packets dropped since going into drop state".
    count: u32,
    /// "Count from previous iteration".
    lastcount: u32,
    /// "Set to true if in drop state".
    dropping: bool,
    /// Largest packet seen (Linux's `maxpacket`).
    max_packet: usize,
}

impl Codel {
    pub(crate) fn new(target: Duration, interval: Duration) -> Self {
        Codel {
            target: nanos(target),
            interval: nanos(interval).max(1),
            first_above_time: 0,
            drop_next: 0,
            count: 0,
            lastcount: 0,
            dropping: false,
            max_packet: 0,
        }
    }

    /// RFC 8289 §5 `control_law`: `t + interval / sqrt(count)`.
    fn control_law(&self, t: u64, count: u32) -> u64 {
        let step = self.interval as f64 / f64::from(count.max(1)).sqrt();
        t.saturating_add(step as u64)
    }

    /// RFC 8289 §5 `dodequeue`: is this packet, leaving at `now` after
    /// `sojourn`, "ok to drop"?
    fn ok_to_drop(&mut self, now: u64, sojourn: u64, backlog: usize) -> bool {
        //# if (sojourn_time < TARGET || queue_.bytes() <= maxpacket_) {
        //#     first_above_time_ = 0;
        if sojourn < self.target || backlog <= self.max_packet {
            self.first_above_time = 0;
            false
        } else if self.first_above_time == 0 {
            //# first_above_time_ = now + INTERVAL;
            self.first_above_time = now.saturating_add(self.interval);
            false
        } else {
            //# } else if (now >= first_above_time_) { ok_to_drop = true;
            now >= self.first_above_time
        }
    }

    /// Decides whether the packet of `len` bytes that reaches the head of
    /// the queue at `now` (nanoseconds) after waiting `sojourn`, with
    /// `backlog` bytes ahead of it when it arrived, is dropped (RFC 8289
    /// §5 `dequeue`, one packet at a time).
    pub(crate) fn drop_at_head(
        &mut self,
        now: u64,
        sojourn: u64,
        backlog: usize,
        len: usize,
    ) -> bool {
        self.max_packet = self.max_packet.max(len);
        let ok = self.ok_to_drop(now, sojourn, backlog);
        if self.dropping {
            if !ok {
                //# if (!r.ok_to_drop) { dropping_ = false; }
                self.dropping = false;
                return false;
            }
            //# while (now >= drop_next_ && dropping_) { drop(r.p); ++count_; ...
            //#     drop_next_ = control_law(drop_next_, count_);
            if now >= self.drop_next {
                self.count = self.count.saturating_add(1);
                self.drop_next = self.control_law(self.drop_next, self.count);
                return true;
            }
            return false;
        }
        if ok {
            //# drop(r.p); ... dropping_ = true;
            //# uint32_t delta = count_ - lastcount_; count_ = 1;
            //# if ((delta > 1) && (now - drop_next_ < 16 * INTERVAL)) count_ = delta;
            //# drop_next_ = control_law(now, count_); lastcount_ = count_;
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = 1;
            if delta > 1
                && delta < u32::MAX / 2
                && now.saturating_sub(self.drop_next) < self.interval.saturating_mul(16)
            {
                self.count = delta;
            }
            self.drop_next = self.control_law(now, self.count);
            self.lastcount = self.count;
            return true;
        }
        false
    }
}
