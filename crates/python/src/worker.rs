//! A Python streamlet's running process, and the host's side of the conversation with it.

use std::collections::{BTreeMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::command::PythonCommand;
use crate::error::PythonError;
use crate::frame::{self, InputRecord, Kind, Outcome};

/// How many of its last stderr lines a failed process's error quotes.
const STDERR_TAIL: usize = 20;

/// A Python streamlet's process, started and greeted.
#[derive(Debug)]
pub struct Worker {
    streamlet: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    out: BytesMut,
}

impl Worker {
    /// Starts the process and says hello with the parameters' values (text in each one's
    /// syntax); returns it with the streamlet's descriptor entry, as it answered.
    ///
    /// # Errors
    ///
    /// When the interpreter cannot be started, or the streamlet cannot (it answers
    /// `FAILED`, or exits).
    pub async fn start(
        command: &PythonCommand,
        instance: &str,
        parameters: &BTreeMap<String, String>,
    ) -> Result<(Worker, serde_json::Value), PythonError> {
        let streamlet = command.reference().to_owned();
        let spawn_error = |source| PythonError::Spawn {
            streamlet: streamlet.clone(),
            interpreter: command.interpreter_path().display().to_string(),
            source,
        };
        let mut child = command
            .command("runnel.worker", &[command.reference()])
            .map_err(spawn_error)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The process goes with its instance: dropped, failed or stopped.
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn_error)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("every pipe was asked for");
        };
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(log_stderr(stderr, streamlet.clone(), tail.clone()));
        let mut worker = Worker {
            streamlet,
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr: tail,
            out: BytesMut::new(),
        };
        let hello = serde_json::json!({
            "protocol": frame::VERSION,
            "instance": instance,
            "parameters": parameters,
        });
        frame::frame(&mut worker.out, Kind::Hello, hello.to_string().as_bytes());
        worker.flush().await?;
        match worker.receive().await? {
            (Kind::Ready, body) => {
                let descriptor = serde_json::from_slice(&body)
                    .map_err(|error| worker.protocol(format!("its READY is not JSON: {error}")))?;
                Ok((worker, descriptor))
            }
            (Kind::Failed, body) => Err(PythonError::Failed {
                streamlet: worker.streamlet.clone(),
                reason: String::from_utf8_lossy(&body).into_owned(),
            }),
            (kind, _) => Err(worker.protocol(format!("it answered HELLO with {kind:?}"))),
        }
    }

    /// Hands over the state to resume from (a snapshot it gave before).
    ///
    /// # Errors
    ///
    /// When the process is gone.
    pub async fn restore(&mut self, snapshot: &[u8]) -> Result<(), PythonError> {
        frame::frame(&mut self.out, Kind::Restore, snapshot);
        self.flush().await
    }

    /// Tells it a schema the producers of inlet `inlet` wrote with, as writer `writer`
    /// (sent with the next batch).
    pub fn schema(&mut self, inlet: u16, writer: u16, schema: &serde_json::Value) {
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(&inlet.to_be_bytes());
        body.extend_from_slice(&writer.to_be_bytes());
        body.extend_from_slice(schema.to_string().as_bytes());
        frame::frame(&mut self.out, Kind::Schema, &body);
    }

    /// Hands over a batch of inlet `inlet`'s records at `now` and returns what became of
    /// each, in order.
    ///
    /// # Errors
    ///
    /// When the process is gone or answers otherwise than the protocol says.
    pub async fn batch(
        &mut self,
        inlet: u16,
        now: i64,
        records: &[InputRecord<'_>],
    ) -> Result<Vec<Outcome>, PythonError> {
        frame::batch(&mut self.out, inlet, now, records);
        self.outcomes(records.len()).await
    }

    /// Hands over a batch of inlet `inlet`'s records at `now` as the Arrow IPC `stream`
    /// holds them (the arrow form; `records` say where each row came from) and returns what
    /// became of each, in order.
    ///
    /// # Errors
    ///
    /// When the process is gone or answers otherwise than the protocol says.
    pub async fn arrow_batch(
        &mut self,
        inlet: u16,
        now: i64,
        records: &[InputRecord<'_>],
        stream: &[u8],
    ) -> Result<Vec<Outcome>, PythonError> {
        frame::arrow_batch(&mut self.out, inlet, now, records, stream);
        self.outcomes(records.len()).await
    }

    /// Sends what is written and reads the `OUTPUTS` answering a batch of `count` records.
    async fn outcomes(&mut self, count: usize) -> Result<Vec<Outcome>, PythonError> {
        self.flush().await?;
        match self.receive().await? {
            (Kind::Outputs, body) => {
                let outcomes = frame::outcomes(body).map_err(|source| PythonError::Malformed {
                    streamlet: self.streamlet.clone(),
                    source,
                })?;
                if outcomes.len() != count {
                    return Err(self.protocol(format!(
                        "it answered a batch of {count} records with {} outcomes",
                        outcomes.len()
                    )));
                }
                Ok(outcomes)
            }
            (kind, _) => Err(self.protocol(format!("it answered BATCH with {kind:?}"))),
        }
    }

    /// Asks for its state.
    ///
    /// # Errors
    ///
    /// When the process is gone or answers otherwise than the protocol says.
    pub async fn checkpoint(&mut self) -> Result<Bytes, PythonError> {
        frame::frame(&mut self.out, Kind::Checkpoint, &[]);
        self.flush().await?;
        match self.receive().await? {
            (Kind::Snapshot, body) => Ok(body),
            (kind, _) => Err(self.protocol(format!("it answered CHECKPOINT with {kind:?}"))),
        }
    }

    /// Asks the process to exit, and waits until it has.
    ///
    /// # Errors
    ///
    /// When it cannot be told or waited for.
    pub async fn quit(mut self) -> Result<(), PythonError> {
        frame::frame(&mut self.out, Kind::Quit, &[]);
        self.flush().await?;
        self.child.wait().await.map_err(|error| self.gone(&error))?;
        Ok(())
    }

    /// The process's id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    async fn flush(&mut self) -> Result<(), PythonError> {
        let written = async {
            self.stdin.write_all(&self.out).await?;
            self.stdin.flush().await
        }
        .await;
        self.out.clear();
        match written {
            Ok(()) => Ok(()),
            Err(error) => Err(self.exited(&error).await),
        }
    }

    async fn receive(&mut self) -> Result<(Kind, Bytes), PythonError> {
        let mut header = [0u8; 5];
        if let Err(error) = self.stdout.read_exact(&mut header).await {
            return Err(self.exited(&error).await);
        }
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let Some(kind) = Kind::from_byte(header[4]) else {
            return Err(self.protocol(format!("it sent a frame of unknown kind {}", header[4])));
        };
        let mut body = vec![0; length.saturating_sub(1)];
        if let Err(error) = self.stdout.read_exact(&mut body).await {
            return Err(self.exited(&error).await);
        }
        Ok((kind, Bytes::from(body)))
    }

    /// The error for a process whose pipes broke: it exited (or is about to).
    async fn exited(&mut self, error: &std::io::Error) -> PythonError {
        let status = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait())
            .await
            .map_or_else(
                |_| format!("still running, but its pipes broke: {error}"),
                |waited| waited.map_or_else(|error| error.to_string(), |status| status.to_string()),
            );
        // The stderr reader may still be taking in its last lines.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        self.gone_with(status)
    }

    fn gone(&self, error: &std::io::Error) -> PythonError {
        self.gone_with(error.to_string())
    }

    fn gone_with(&self, status: String) -> PythonError {
        let stderr = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        PythonError::Exited {
            streamlet: self.streamlet.clone(),
            status,
            stderr,
        }
    }

    fn protocol(&self, reason: String) -> PythonError {
        PythonError::Protocol {
            streamlet: self.streamlet.clone(),
            reason,
        }
    }
}

/// Logs what the process writes to stderr, line by line, keeping the last lines for an
/// error if it exits.
async fn log_stderr(
    stderr: tokio::process::ChildStderr,
    streamlet: String,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::info!(target: "runnel_python", streamlet = %streamlet, "{line}");
        let mut tail = tail
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}
