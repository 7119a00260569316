use std::time::Duration;

use runnel_host::testkit::{TestError, TestRun};
use runnel_streamlet::prelude::*;

use crate::model::{IN, OUT, reading};

/// Reads everything and commits nothing.
struct Forgetful;

impl Streamlet for Forgetful {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN)
    }

    async fn run(self, mut ctx: Context) -> Result<()> {
        let mut input = ctx.inlet(IN);
        while let Some(message) = input.next().await? {
            drop(message);
        }
        Ok(())
    }
}

#[tokio::test]
async fn uncommitted_input_fails_the_run() {
    let outcome = TestRun::new(Forgetful)
        .input(IN, [reading("a", 1.0)])
        .run()
        .await;
    match outcome {
        Err(error @ TestError::Uncommitted { .. }) => assert_eq!(
            error.to_string(),
            "inlet 'in' left input uncommitted: partition 0 is committed up to nothing, but it holds 1 records"
        ),
        other => panic!("expected uncommitted input, got {other:?}"),
    }
}

/// Asks for a port that is not in its shape.
struct Confused;

impl Streamlet for Confused {
    fn shape(&self) -> Shape {
        Shape::new().inlet(IN)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        ctx.outlet(OUT);
        Ok(())
    }
}

#[tokio::test]
#[should_panic(expected = "the streamlet asked for outlet 'out', which is not in its shape()")]
async fn asking_for_an_undeclared_port_panics() {
    let _ = TestRun::new(Confused).run().await;
}

/// Never ends on its own.
struct Forever;

impl Streamlet for Forever {
    fn shape(&self) -> Shape {
        Shape::new().outlet(OUT)
    }

    async fn run(self, ctx: Context) -> Result<()> {
        let out = ctx.outlet(OUT);
        while !ctx.is_stopping() {
            out.send(&reading("tick", 0.0)).await?;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(())
    }
}

#[tokio::test]
async fn sources_run_until_stopped_and_a_hung_run_times_out() -> anyhow::Result<()> {
    let run = TestRun::new(Forever)
        .stop_after(Duration::from_millis(100))
        .run()
        .await?;
    assert!(!run.output(OUT).is_empty());
    let hung = TestRun::new(Forever)
        .timeout(Duration::from_millis(100))
        .run()
        .await;
    assert!(matches!(hung, Err(TestError::TimedOut(_))), "{hung:?}");
    Ok(())
}

#[tokio::test]
async fn streamlet_errors_carry_their_kind() {
    let failing = Egress::new(IN, |_| async {
        Err(Error::external(std::io::Error::other("database down")))
    });
    let outcome = TestRun::new(failing)
        .input(IN, [reading("a", 1.0)])
        .run()
        .await;
    match outcome {
        Err(TestError::Streamlet { kind, message }) => {
            assert_eq!(kind, runnel_streamlet::ErrorKind::External);
            assert_eq!(message, "database down");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}
