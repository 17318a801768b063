//! A private PostgreSQL server for one test: initdb into a temporary
//! directory, its own port on 127.0.0.1, stopped on drop (also when the
//! test panics). As root, the server runs as `nobody` (PostgreSQL refuses
//! to run as root).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct PgServer {
    _dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    pub url: String,
}

/// The directory holding initdb and pg_ctl: on PATH, else the newest of
/// Debian's /usr/lib/postgresql/*/bin.
fn bin_dir() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    if let Some(d) = on_path {
        return d;
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is not installed (scripts/install-deps.sh installs it)")
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    found.pop().expect("no /usr/lib/postgresql/*/bin/initdb").1
}

pub fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// `program args` as the server's user.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn run(mut c: Command, what: &str) {
    let out = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl PgServer {
    pub fn start() -> PgServer {
        let bin = bin_dir();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        if is_root() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            run(
                {
                    let mut c = Command::new("chown");
                    c.arg("nobody").arg(&data);
                    c
                },
                "chown",
            );
        }
        let mut init = as_server_user(&bin.join("initdb"));
        init.arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        ]);
        run(init, "initdb");
        let port = free_port();
        let server = PgServer {
            _dir: dir,
            data,
            bin,
            port,
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        };
        server.start_again();
        server
    }

    /// Start the server (again, after [`PgServer::stop_immediately`]) on
    /// the same data directory and port.
    pub fn start_again(&self) {
        let mut start = as_server_user(&self.bin.join("pg_ctl"));
        start
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.data.join("server.log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
                self.port,
                self.data.display()
            ))
            .arg("start");
        run(start, "pg_ctl start");
    }

    /// Passwords checked from here on (scram-sha-256) for every role but
    /// `postgres`, which stays trusted, on TCP; the server restarts (a
    /// reload would take effect at some later moment).
    pub fn require_passwords(&self) {
        std::fs::write(
            self.data.join("pg_hba.conf"),
            "local all all trust\n\
             host all postgres 127.0.0.1/32 trust\n\
             host all all 127.0.0.1/32 scram-sha-256\n",
        )
        .unwrap();
        self.stop_immediately();
        self.start_again();
    }

    /// `pg_ctl stop -m immediate`: every connection dropped at once, as in
    /// a crash.
    pub fn stop_immediately(&self) {
        let mut stop = as_server_user(&self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]);
        run(stop, "pg_ctl stop");
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let mut stop = as_server_user(&self.bin.join("pg_ctl"));
        stop.arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"]);
        let _ = stop.output();
    }
}
