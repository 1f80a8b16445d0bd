//! Helpers for tests that run real server processes (`ringmq namesrv`, `ringmq standalone`) and
//! Java programs: a child whose stdout announces readiness and whose stderr is forwarded and
//! searchable, stopped cleanly (SIGTERM) or crashed (SIGKILL) on demand and killed on drop;
//! temporary directories; Maven classpaths resolved offline.
#![allow(dead_code)] // each test binary uses its own subset of these helpers

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long a test waits for a server to start or for an awaited log line.
pub const EVENT_DEADLINE: Duration = Duration::from_secs(30);

/// How long a server may take to stop after SIGTERM (flush, persist, unregister) or to die
/// after SIGKILL.
pub const STOP_DEADLINE: Duration = Duration::from_secs(30);

/// A running server process; killed when this drops, even when the test fails.
pub struct ServerProcess {
    /// None once handed to the thread that waits for it to exit after a signal.
    child: Option<Child>,
    stdout_lines: Receiver<String>,
    log_lines: Receiver<String>,
}

impl ServerProcess {
    /// Starts `command` with stdout and stderr piped; both are echoed to the test's stderr
    /// with `label` in front, and kept for [`Self::wait_for_stdout`] / [`Self::wait_for_any_log`].
    pub fn spawn(mut command: Command, label: &'static str) -> Self {
        let mut child = command
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("spawn {label}: {err}"));
        let stdout_lines = forward_lines(child.stdout.take().unwrap(), label);
        let log_lines = forward_lines(child.stderr.take().unwrap(), label);
        Self {
            child: Some(child),
            stdout_lines,
            log_lines,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits (up to [`EVENT_DEADLINE`]) for a stdout line starting with `prefix`; returns the
    /// rest of it (e.g. the address after "listening on ").
    pub fn wait_for_stdout(&self, prefix: &str) -> String {
        self.wait_for_stdout_within(prefix, EVENT_DEADLINE)
    }

    /// [`Self::wait_for_stdout`] with its own bound, for a step known to take longer.
    pub fn wait_for_stdout_within(&self, prefix: &str, deadline: Duration) -> String {
        let line = wait_for_line(&self.stdout_lines, &[prefix], deadline, |line, p| {
            line.starts_with(p)
        });
        line[prefix.len()..].to_owned()
    }

    /// Waits (up to [`EVENT_DEADLINE`]) for a log (stderr) line containing any of `needles`.
    pub fn wait_for_any_log(&self, needles: &[&str]) -> String {
        wait_for_line(&self.log_lines, needles, EVENT_DEADLINE, |line, needle| {
            line.contains(needle)
        })
    }

    /// SIGTERM, then waits (up to [`STOP_DEADLINE`]) for the process to exit; panics if it
    /// does not (it is then killed).
    pub fn terminate(self) -> ExitStatus {
        self.signal_and_wait(libc::SIGTERM)
    }

    /// SIGKILL: the process dies as in a crash, with no chance to flush or persist.
    pub fn kill(self) -> ExitStatus {
        self.signal_and_wait(libc::SIGKILL)
    }

    fn signal_and_wait(mut self, signal: libc::c_int) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as libc::pid_t;
        // SAFETY: kill(2) only sends a signal; `pid` is our child, not yet reaped.
        unsafe { libc::kill(pid, signal) };
        let (exited_tx, exited_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = exited_tx.send(child.wait());
        });
        match exited_rx.recv_timeout(STOP_DEADLINE) {
            Ok(status) => status.expect("wait for server exit"),
            Err(_) => {
                // SAFETY: as above; the waiting thread still holds the unreaped child.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("server {pid} did not exit within {STOP_DEADLINE:?} of signal {signal}");
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Echoes each line of `stream` to stderr behind `label` and sends it on the returned channel.
fn forward_lines(
    stream: impl std::io::Read + Send + 'static,
    label: &'static str,
) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            eprintln!("[{label}] {line}");
            let _ = tx.send(line);
        }
    });
    rx
}

fn wait_for_line(
    lines: &Receiver<String>,
    needles: &[&str],
    within: Duration,
    matches: impl Fn(&str, &str) -> bool,
) -> String {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if needles.iter().any(|needle| matches(&line, needle)) => return line,
            Ok(_) => continue,
            Err(err) => panic!("no line matching any of {needles:?}: {err}"),
        }
    }
}

/// Runs `command` to completion, its stdout echoed as it comes; kills it if it runs past
/// `limit`. Returns its exit status (None: killed at the limit) and its whole stdout.
pub fn run_with_limit(mut command: Command, limit: Duration) -> (Option<ExitStatus>, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn program");
    let stdout = child.stdout.take().unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut output = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            output.push_str(&line);
            output.push('\n');
        }
        let _ = done_tx.send(output);
    });
    match done_rx.recv_timeout(limit) {
        Ok(output) => (Some(child.wait().expect("program exit status")), output),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            (None, format!("killed after running past {limit:?}"))
        }
    }
}

/// A directory unique to this test run, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(purpose: &str) -> Self {
        Self::new_in(&std::env::temp_dir(), purpose)
    }

    /// A directory unique to this run under `parent` (e.g. a file system a test mounted).
    pub fn new_in(parent: &Path, purpose: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = parent.join(format!(
            "ringmq-test-{purpose}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The classpath of the Maven project in `tests/<dir>/pom.xml`, resolved offline from the
/// local repository (the Java compatibility tests need the jars there already:
/// scripts/fetch-deps.sh).
pub fn maven_classpath(dir: &str) -> String {
    let pom = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir)
        .join("pom.xml");
    let out = TempDir::new("maven-classpath");
    let cp_file = out.path().join("classpath.txt");
    let status = Command::new("mvn")
        .args(["-o", "-q", "-f"])
        .arg(&pom)
        .arg("dependency:build-classpath")
        .arg(format!("-Dmdep.outputFile={}", cp_file.display()))
        .status()
        .expect("run mvn");
    assert!(
        status.success(),
        "mvn could not resolve {} offline",
        pom.display()
    );
    std::fs::read_to_string(&cp_file).expect("classpath file")
}
