//! A dumbbell: N flows sharing one bottleneck, for showing congestion.
//!
//! ```text
//!  sender 0 --access 0--\                          /--> receiver 0
//!  sender 1 --access 1---> [router queue] ==bottleneck==> receiver 1
//!  sender N --access N--/     (netblt_link::Link)   \--> receiver N
//!        ^------------- reverse path, one link per flow -------'
//! ```
//!
//! Every forward packet crosses its flow's access link (fast, with the
//! flow's own propagation delay) and then the one shared bottleneck, a
//! `netblt_link::Link` with a rate (optionally stepping over time) or a
//! mahimahi delivery trace, a finite byte queue, drop-tail or CoDel, and
//! random loss: the same model the emulator runs. Replies (TCP ACKs, NETBLT
//! control) return over an uncongested link per flow. Hosts cost nothing:
//! what limits a flow is the network and its protocol.
//!
//! A flow is either NETBLT (netblt-proto's engine on both hosts, memory to
//! memory, every delivered byte checked against the sender's stream, as
//! `transfer` does) or the deterministic [`crate::tcp`] model.
//!
//! Describe a run with a [`Scenario`] (JSON), then [`run_dumbbell`] it, or
//! build a [`Dumbbell`], give it NETBLT `Config`s of your own with
//! [`Dumbbell::set_netblt_configs`], and [`Dumbbell::run`] it. The
//! [`DumbbellReport`] holds per-flow time series, goodput, retransmissions,
//! bottleneck drops and delay percentiles, bottleneck utilization and queue
//! percentiles, and Jain's fairness index.

mod engine;
mod report;
mod scenario;

pub use engine::{run_dumbbell, run_dumbbell_with, Dumbbell};
pub use report::{BottleneckReport, DumbbellReport, FlowDrops, FlowReport};
pub use scenario::{
    AqmSpec, BottleneckSpec, FlowKind, FlowSpec, LimitStepSpec, NetbltSpec, PolicySpec,
    RateStepSpec, Scenario, ScenarioError,
};
