//! Apache RocketMQ 5.3.3's NameServer and broker, run from the Maven jars of
//! `tests/apache-servers/server-5.3.3/pom.xml` (resolved offline; `scripts/fetch-deps.sh`
//! fetches them), plus Apache's mqadmin against them. Each JVM is killed on drop, even when a test fails.
//! Needs Java 17+. Tests that use it include `namesrv_support` too (for `maven_classpath`).
#![allow(dead_code)] // each test binary uses its own subset of these helpers

pub mod broker_checks;

use crate::namesrv_support::maven_classpath;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The broker's name and cluster in the config written here.
pub const BROKER_NAME: &str = "broker-a";
pub const CLUSTER: &str = "DefaultCluster";

/// A small commit-log file, so the broker's store stays small in the temp directory.
const COMMIT_LOG_FILE_BYTES: u64 = 16 << 20;
/// Heap of each JVM; the defaults would take a quarter of the machine.
const JVM_HEAP: &str = "-Xmx512m";
/// How long a JVM may take to be ready: the broker's first registration can come 10 s after
/// it booted, and on a loaded machine (several test runs on two cores) booting alone took
/// over 30 s.
const JVM_READY_DEADLINE: Duration = Duration::from_secs(120);
/// How many random ports to try for the broker's three adjacent ports.
const PORT_ATTEMPTS: usize = 50;
/// What the broker logs once the NameServer has its registration. Its first registration
/// often comes from a timer 10 s after "boot success" (the one made while starting finds no
/// NameServer connected yet), so tests wait for this instead.
const REGISTERED: &str = "Registering current broker to name server completed";

/// Logging config for every JVM (passed as `rmq.logback.configurationFile`, the property of
/// RocketMQ's shaded logback): warnings, and the broker's own log, to stderr, which the tests
/// read for [`REGISTERED`]; stdout keeps only what the tools print. Without it the JVMs log to
/// files under user.home, and the broker jar's config makes mqadmin print logback's status
/// on stdout.
const LOGBACK_XML: &str = r#"<configuration>
  <appender name="STDERR" class="org.apache.rocketmq.logging.ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger - %msg%n</pattern></encoder>
  </appender>
  <logger name="RocketmqBroker" level="INFO" additivity="false"><appender-ref ref="STDERR"/></logger>
  <!-- Warns every second that POP revive is off with the timer wheel (off here: smaller store). -->
  <logger name="RocketmqPop" level="ERROR"/>
  <root level="WARN"><appender-ref ref="STDERR"/></root>
</configuration>
"#;

/// A directory removed on drop (ROCKETMQ_HOME, configs, the store, the JVMs' logs).
pub struct TempDir(pub PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ringmq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running JVM, killed on drop.
struct Jvm(Child);

impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The Apache jars and a home directory for their JVMs (ROCKETMQ_HOME, user.home, the logging
/// config, configs and stores), removed on drop.
pub struct JavaEnv {
    classpath: String,
    home: TempDir,
}

impl JavaEnv {
    pub fn new() -> Self {
        let home = TempDir::new("apache");
        std::fs::write(home.0.join("logback.xml"), LOGBACK_XML).unwrap();
        Self {
            classpath: maven_classpath("apache-servers/server-5.3.3"),
            home,
        }
    }

    /// `java` with the jars, a bounded heap, the logging config, and ROCKETMQ_HOME and
    /// user.home (where the JVMs would put logs and stores) in the home directory.
    fn java(&self) -> Command {
        let home = &self.home.0;
        let mut command = Command::new("java");
        command
            .arg(JVM_HEAP)
            .arg(format!("-Duser.home={}", home.display()))
            .arg(format!(
                "-Drmq.logback.configurationFile={}",
                home.join("logback.xml").display()
            ))
            .arg("-cp")
            .arg(&self.classpath)
            .env("ROCKETMQ_HOME", home);
        command
    }

    /// Runs Apache's `mqadmin <args> -n <namesrv>` (any NameServer, Apache's or ringmq's) and
    /// returns its standard output.
    pub fn mqadmin(&self, namesrv: &str, args: &[&str]) -> String {
        let output = self
            .java()
            .arg("org.apache.rocketmq.tools.command.MQAdminStartup")
            .args(args)
            .args(["-n", namesrv])
            .output()
            .expect("run mqadmin");
        assert!(
            output.status.success(),
            "mqadmin {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf-8 output")
    }
}

/// An Apache NameServer, with the Java environment it runs in.
pub struct ApacheNameServer {
    // Field order is drop order: the JVM stops before its directory is removed.
    namesrv: Jvm,
    pub addr: String,
    pub java: JavaEnv,
}

impl ApacheNameServer {
    /// Starts one on a free loopback port; returns once it has booted.
    pub fn start() -> Self {
        let java = JavaEnv::new();
        let port = free_port();
        let conf = java.home.0.join("namesrv.properties");
        std::fs::write(&conf, format!("listenPort={port}\n")).unwrap();
        let namesrv = spawn_until(
            java.java()
                .arg("org.apache.rocketmq.namesrv.NamesrvStartup")
                .arg("-c")
                .arg(&conf),
            "boot success",
        );
        Self {
            namesrv,
            addr: format!("127.0.0.1:{port}"),
            java,
        }
    }
}

/// An Apache NameServer and one master broker registered with it.
pub struct ApacheCluster {
    // Field order is drop order: the broker stops before its NameServer.
    broker: Jvm,
    pub namesrv: ApacheNameServer,
    pub broker_addr: String,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A port P such that P-2 (the broker's "fast" listener), P and P+1 (its HA listener) are free.
fn free_broker_port() -> u16 {
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if port > 2 && port < u16::MAX && free(port - 2) && free(port) && free(port + 1) {
            return port;
        }
    }
    panic!("no three free ports for the broker after {PORT_ATTEMPTS} tries");
}

impl ApacheCluster {
    pub fn start() -> Self {
        let namesrv = ApacheNameServer::start();
        let (java, namesrv_addr) = (&namesrv.java, &namesrv.addr);
        let home = &java.home.0;
        let broker_port = free_broker_port();
        let store = home.join("store");
        let broker_conf = home.join("broker.conf");
        std::fs::write(
            &broker_conf,
            format!(
                "brokerClusterName={CLUSTER}\nbrokerName={BROKER_NAME}\nbrokerId=0\n\
                 listenPort={broker_port}\nbrokerIP1=127.0.0.1\nnamesrvAddr={namesrv_addr}\n\
                 storePathRootDir={store}\nstorePathCommitLog={store}/commitlog\n\
                 autoCreateTopicEnable=true\nmappedFileSizeCommitLog={COMMIT_LOG_FILE_BYTES}\n\
                 timerWheelEnable=false\n",
                store = store.display()
            ),
        )
        .unwrap();
        let broker = spawn_until(
            java.java()
                .arg("org.apache.rocketmq.broker.BrokerStartup")
                .arg("-c")
                .arg(&broker_conf),
            REGISTERED,
        );
        Self {
            broker,
            broker_addr: format!("127.0.0.1:{broker_port}"),
            namesrv,
        }
    }

    /// Runs Apache's `mqadmin <args>` against this cluster's NameServer.
    pub fn mqadmin(&self, args: &[&str]) -> String {
        self.namesrv.java.mqadmin(&self.namesrv.addr, args)
    }
}

/// Starts `command` and waits (up to [`JVM_READY_DEADLINE`]) for a line containing `ready` on
/// its stdout or stderr; both keep being drained (stderr's warnings echoed) afterwards.
fn spawn_until(command: &mut Command, ready: &'static str) -> Jvm {
    let mut child = Jvm(command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run java"));
    let (ready_tx, ready_rx) = mpsc::channel();
    let stdout = child.0.stdout.take().unwrap();
    let stderr = child.0.stderr.take().unwrap();
    let pipes: [(Box<dyn std::io::Read + Send>, bool); 2] =
        [(Box::new(stdout), false), (Box::new(stderr), true)];
    for (pipe, echo) in pipes {
        let ready_tx = ready_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                // The broker's INFO lines (its whole config among them) are only waited on.
                if echo && !line.contains(" INFO ") {
                    eprintln!("[apache] {line}");
                }
                if line.contains(ready) {
                    let _ = ready_tx.send(line);
                }
            }
        });
    }
    let line = ready_rx
        .recv_timeout(JVM_READY_DEADLINE)
        .unwrap_or_else(|err| panic!("no {ready:?} from {command:?}: {err}"));
    eprintln!("[apache] ready: {line}");
    child
}
