//! `make workshop-doctor` on laptops this machine is not: `workshop/doctor.sh` runs with a PATH
//! that holds only fake tools (each answers its version, as the real one would), one missing at
//! a time, on a fake Linux (Debian, Fedora), WSL2 or macOS, amd64 or arm64 (a fake `uname`).
//! Each missing tool is one line that names it and the command that installs it there, in
//! the words of workshop/kit/src/messages/doctor.rs; the exit code says whether the build can start.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use math_workshop::messages::{
    DOCTOR_CARGO_PATH, DOCTOR_CC, DOCTOR_DISK, DOCTOR_DISK_MORE, DOCTOR_MISSING, DOCTOR_OK,
    DOCTOR_PLUGIN_PATH, DOCTOR_PREPARED, DOCTOR_RUST_OLD, DOCTOR_SUMMARY, DOCTOR_WSL_MNT, Lang,
    Msg,
};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn script() -> PathBuf {
    repository().join("workshop/doctor.sh")
}

/// A laptop: its system as `uname` tells it, and the tools on its PATH.
struct Laptop {
    /// `uname -s`, `uname -r`, `uname -m`.
    uname: [&'static str; 3],
    /// Fake tools, each with what its version command prints.
    tools: Vec<(&'static str, &'static str)>,
    /// The folder of the clone (`DOCTOR_CLONE`; the doctor's own folder's parent otherwise).
    clone: Option<&'static str>,
    /// What `df -Pk` says is free where the clone is, in KiB (no `df`: not checked).
    free_kib: Option<u64>,
    /// Rust installed by rustup into `~/.cargo/bin`, which is not on the PATH.
    cargo_home_off_path: bool,
    /// A tool in `~/.cargo/bin` (not on the PATH) besides the one of that name on the PATH.
    in_cargo_bin_too: Option<(&'static str, &'static str)>,
    /// Rust from the standalone installer (its tools elsewhere on the PATH), and `~/.cargo/bin`,
    /// where `cargo install` puts `kubectl math`, not on the PATH. Otherwise it is, as rustup
    /// leaves it.
    standalone_rust: bool,
    /// What `make workshop-prepare` already built, as `du -sk` counts it, in KiB: the clone's
    /// `target/workshop/` and the crates in `~/.cargo/registry`.
    built_kib: Option<(u64, u64)>,
}

const RUSTC: (&str, &str) = ("rustc", "rustc 1.90.0 (1159e78c4 2025-09-14)");
const CARGO: (&str, &str) = ("cargo", "cargo 1.90.0 (840b83a10 2025-07-30)");
const CC: (&str, &str) = ("cc", "cc (Debian 12.2.0-14) 12.2.0");
const MAKE: (&str, &str) = ("make", "GNU Make 4.3");
const GIT: (&str, &str) = ("git", "git version 2.39.5");
const KUBECTL: (&str, &str) = (
    "kubectl",
    "Client Version: v1.33.0\nKustomize Version: v5.6.0",
);
const RUSTUP: (&str, &str) = ("rustup", "rustup 1.28.2");

const DEBIAN: [&str; 3] = ["Linux", "6.1.0-26-amd64", "x86_64"];
const WSL_ARM: [&str; 3] = ["Linux", "5.15.167.4-microsoft-standard-WSL2", "aarch64"];
const MAC_ARM: [&str; 3] = ["Darwin", "24.1.0", "arm64"];

impl Laptop {
    /// Every tool the workshop needs, on `uname`'s system, with `extra` tools (a package
    /// manager, brew, rustup).
    fn complete(uname: [&'static str; 3], extra: &[&'static str]) -> Self {
        let mut tools = vec![RUSTC, CARGO, CC, MAKE, GIT, KUBECTL];
        tools.extend(extra.iter().map(|name| (*name, "")));
        Laptop {
            uname,
            tools,
            clone: None,
            free_kib: None,
            cargo_home_off_path: false,
            in_cargo_bin_too: None,
            standalone_rust: false,
            built_kib: None,
        }
    }

    fn without(mut self, tool: &str) -> Self {
        self.tools.retain(|(name, _)| *name != tool);
        self
    }

    fn with(mut self, tool: (&'static str, &'static str)) -> Self {
        self.tools.retain(|(name, _)| *name != tool.0);
        self.tools.push(tool);
        self
    }

    /// What `sh workshop/doctor.sh` prints there, line by line, and its exit code.
    fn doctor(&self, lang: &str) -> (Vec<String>, Option<i32>) {
        let bin = tempfile::tempdir().expect("a temporary directory");
        let [system, release, machine] = self.uname;
        fake(
            bin.path(),
            "uname",
            &format!(
                "case $1 in -s) echo {system} ;; -r) echo {release} ;; -m) echo {machine} ;; esac"
            ),
        );
        let home = tempfile::tempdir().expect("a temporary home");
        let cargo_bin = home.path().join(".cargo/bin");
        for (name, version) in &self.tools {
            let said: Vec<String> = version.lines().map(|l| format!("echo '{l}'")).collect();
            let rustup_owned = matches!(*name, "rustc" | "cargo" | "rustup");
            if self.cargo_home_off_path && rustup_owned {
                std::fs::create_dir_all(&cargo_bin).expect("mkdir ~/.cargo/bin");
                fake(&cargo_bin, name, &said.join("\n"));
            } else {
                fake(bin.path(), name, &said.join("\n"));
            }
        }
        if let Some((name, version)) = self.in_cargo_bin_too {
            std::fs::create_dir_all(&cargo_bin).expect("mkdir ~/.cargo/bin");
            fake(&cargo_bin, name, &format!("echo '{version}'"));
        }
        if let Some(free) = self.free_kib {
            fake(
                bin.path(),
                "df",
                &format!(
                    "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n\
                     echo '/dev/sda1 100000000 90000000 {free} 90% /'"
                ),
            );
        }
        let clone = tempfile::tempdir().expect("a temporary clone");
        if let Some((target, crates)) = self.built_kib {
            std::fs::create_dir_all(clone.path().join("target/workshop")).expect("mkdir target");
            std::fs::create_dir_all(home.path().join(".cargo/registry")).expect("mkdir registry");
            fake(
                bin.path(),
                "du",
                &format!(
                    "case $2 in */target/workshop) echo '{target} x' ;; */registry) echo '{crates} x' ;; *) echo '0 x' ;; esac"
                ),
            );
        }
        let mut path = bin.path().display().to_string();
        if !self.standalone_rust && !self.cargo_home_off_path {
            path = format!("{path}:{}", cargo_bin.display());
        }
        let mut command = Command::new("/bin/sh");
        command
            .arg(script())
            .env_clear()
            .env("PATH", path)
            .env("HOME", home.path())
            .env("LANG", lang);
        if let Some(clone) = self.clone {
            command.env("DOCTOR_CLONE", clone);
        } else if self.built_kib.is_some() {
            command.env("DOCTOR_CLONE", clone.path());
        }
        let output = command.output().expect("sh runs");
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (
            text.lines().map(str::to_string).collect(),
            output.status.code(),
        )
    }
}

/// An executable `name` in `dir` that runs `body`.
fn fake(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("a fake tool is written");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("a fake tool is executable");
}

fn say(msg: &Msg, lang: Lang, args: &[(&str, &str)]) -> String {
    let args: Vec<(&str, &dyn std::fmt::Display)> = args
        .iter()
        .map(|(name, value)| (*name, value as &dyn std::fmt::Display))
        .collect();
    msg.render(lang, &args)
}

/// The two lines of a doctor that found `tool` missing, installed with `command`.
fn one_missing(tool: &str, command: &str, lang: Lang) -> Vec<String> {
    vec![
        say(
            &DOCTOR_MISSING,
            lang,
            &[("tool", tool), ("command", command)],
        ),
        say(&DOCTOR_SUMMARY, lang, &[("count", "1")]),
    ]
}

const ENGLISH: &str = "C.UTF-8";
const RUSTUP_INSTALL: &str = "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh";

#[test]
fn a_complete_laptop_passes_with_the_versions_it_found() {
    let (lines, code) = Laptop::complete(DEBIAN, &["apt-get"]).doctor(ENGLISH);
    assert_eq!(
        lines,
        [say(
            &DOCTOR_OK,
            Lang::En,
            &[(
                "tools",
                "rustc 1.90.0, cargo, cc, make, git, kubectl v1.33.0"
            )]
        )]
    );
    assert_eq!(code, Some(0));
}

#[test]
fn a_kubectl_outside_the_guides_tested_range_is_warned_of_not_missing() {
    use math_workshop::messages::DOCTOR_KUBECTL_UNTESTED;
    for (version, warned) in [
        ("v1.31.4", true),
        ("v1.32.0", false),
        ("v1.36.2", false),
        ("v1.37.0", true),
    ] {
        let said = format!("Client Version: {version}\nKustomize Version: v5.6.0");
        let laptop = Laptop::complete(DEBIAN, &["apt-get"])
            .with(("kubectl", Box::leak(said.into_boxed_str())));
        let (lines, code) = laptop.doctor(ENGLISH);
        let warning = say(&DOCTOR_KUBECTL_UNTESTED, Lang::En, &[("version", version)]);
        assert_eq!(lines.contains(&warning), warned, "{version}: {lines:?}");
        assert_eq!(code, Some(0), "{version}: {lines:?}");
    }
}

#[test]
fn each_missing_tool_on_debian_is_one_line_with_its_apt_command() {
    let cc = DOCTOR_CC.render(Lang::En, &[]);
    let cases = [
        ("rustc", "rustc", RUSTUP_INSTALL.to_string()),
        ("cargo", "cargo", RUSTUP_INSTALL.to_string()),
        (
            "cc",
            cc.as_str(),
            "sudo apt-get install -y build-essential".to_string(),
        ),
        ("make", "make", "sudo apt-get install -y make".to_string()),
        ("git", "git", "sudo apt-get install -y git".to_string()),
        (
            "kubectl",
            "kubectl",
            "curl -LO https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubectl && sudo install kubectl /usr/local/bin/"
                .to_string(),
        ),
    ];
    for (missing, named, command) in cases {
        let (lines, code) = Laptop::complete(DEBIAN, &["apt-get"])
            .without(missing)
            .doctor(ENGLISH);
        assert_eq!(
            lines,
            one_missing(named, &command, Lang::En),
            "without {missing}"
        );
        assert_eq!(code, Some(1), "without {missing}");
    }
}

#[test]
fn fedora_gets_dnf_and_an_unknown_distribution_the_package_name() {
    let cc = DOCTOR_CC.render(Lang::En, &[]);
    let (lines, _) = Laptop::complete(DEBIAN, &["dnf"])
        .without("cc")
        .doctor(ENGLISH);
    assert_eq!(lines, one_missing(&cc, "sudo dnf install -y gcc", Lang::En));
    let (lines, _) = Laptop::complete(DEBIAN, &[]).without("git").doctor(ENGLISH);
    assert_eq!(
        lines,
        one_missing(
            "git",
            "the package git of your distribution's package manager",
            Lang::En
        )
    );
}

#[test]
fn a_mac_gets_the_command_line_tools_and_kubectl_from_homebrew_or_for_its_cpu() {
    let cc = DOCTOR_CC.render(Lang::En, &[]);
    for (missing, named) in [("cc", cc.as_str()), ("make", "make"), ("git", "git")] {
        let (lines, code) = Laptop::complete(MAC_ARM, &["brew"])
            .without(missing)
            .doctor(ENGLISH);
        assert_eq!(
            lines,
            one_missing(named, "xcode-select --install", Lang::En),
            "without {missing}"
        );
        assert_eq!(code, Some(1));
    }
    let (lines, _) = Laptop::complete(MAC_ARM, &["brew"])
        .without("kubectl")
        .doctor(ENGLISH);
    assert_eq!(
        lines,
        one_missing("kubectl", "brew install kubectl", Lang::En)
    );
    let (lines, _) = Laptop::complete(MAC_ARM, &[])
        .without("kubectl")
        .doctor(ENGLISH);
    assert_eq!(
        lines,
        one_missing(
            "kubectl",
            "curl -LO https://dl.k8s.io/release/v1.33.0/bin/darwin/arm64/kubectl && chmod +x kubectl && sudo mv kubectl /usr/local/bin/",
            Lang::En
        )
    );
}

#[test]
fn an_arm_laptop_under_wsl_gets_the_arm64_kubectl() {
    let (lines, code) = Laptop::complete(WSL_ARM, &["apt-get"])
        .without("kubectl")
        .doctor(ENGLISH);
    assert_eq!(
        lines,
        one_missing(
            "kubectl",
            "curl -LO https://dl.k8s.io/release/v1.33.0/bin/linux/arm64/kubectl && sudo install kubectl /usr/local/bin/",
            Lang::En
        )
    );
    assert_eq!(code, Some(1));
}

#[test]
fn a_rustc_too_old_for_edition_2024_is_named_with_how_to_update_it() {
    let old = (
        "rustc",
        "rustc 1.75.0 (82e1608df 2023-12-21) (built from a source tarball)",
    );
    let too_old = |command: &str| {
        vec![
            say(
                &DOCTOR_RUST_OLD,
                Lang::En,
                &[
                    ("version", "1.75.0"),
                    ("needed", "1.89"),
                    ("command", command),
                ],
            ),
            say(&DOCTOR_SUMMARY, Lang::En, &[("count", "1")]),
        ]
    };
    // A distribution's rustc: rustup is the way to a new one.
    let (lines, code) = Laptop::complete(DEBIAN, &["apt-get"])
        .with(old)
        .doctor(ENGLISH);
    assert_eq!(lines, too_old(RUSTUP_INSTALL));
    assert_eq!(code, Some(1));
    let (lines, _) = Laptop::complete(DEBIAN, &["apt-get"])
        .with(old)
        .with(RUSTUP)
        .doctor(ENGLISH);
    assert_eq!(lines, too_old("rustup update"));
    // The oldest that builds passes.
    let (_, code) = Laptop::complete(DEBIAN, &["apt-get"])
        .with(("rustc", "rustc 1.89.0 (29483883e 2025-08-04)"))
        .doctor(ENGLISH);
    assert_eq!(code, Some(0));
}

#[test]
fn a_japanese_reader_reads_the_doctor_in_japanese() {
    let (lines, code) = Laptop::complete(DEBIAN, &["apt-get"])
        .without("cc")
        .without("kubectl")
        .doctor("ja_JP.UTF-8");
    let cc = DOCTOR_CC.render(Lang::Ja, &[]);
    assert_eq!(
        lines,
        [
            say(
                &DOCTOR_MISSING,
                Lang::Ja,
                &[
                    ("tool", cc.as_str()),
                    ("command", "sudo apt-get install -y build-essential")
                ]
            ),
            say(
                &DOCTOR_MISSING,
                Lang::Ja,
                &[
                    ("tool", "kubectl"),
                    (
                        "command",
                        "curl -LO https://dl.k8s.io/release/v1.33.0/bin/linux/amd64/kubectl && sudo install kubectl /usr/local/bin/"
                    )
                ]
            ),
            say(&DOCTOR_SUMMARY, Lang::Ja, &[("count", "2")]),
        ]
    );
    assert_eq!(code, Some(1));
}

/// On this machine, through make, with the real tools: the line a participant sees first.
#[test]
fn make_workshop_doctor_passes_here() {
    let output = Command::new("make")
        .args(["--no-print-directory", "workshop-doctor"])
        .current_dir(repository())
        .env("LC_ALL", "C.UTF-8")
        .env_remove("MAKEFLAGS")
        .output()
        .expect("make runs");
    let said = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(
        said.lines()
            .any(|l| l.starts_with("workshop-doctor: ✓ rustc ")),
        "{said}"
    );
}

/// The script's sentences are the catalogue's, in both languages: a message edited in one
/// place only fails here.
#[test]
fn the_script_speaks_the_catalogues_words() {
    let text = std::fs::read_to_string(script()).unwrap_or_default();
    let catalogue = [
        &DOCTOR_OK,
        &DOCTOR_MISSING,
        &DOCTOR_CC,
        &DOCTOR_RUST_OLD,
        &math_workshop::messages::DOCTOR_PACKAGE,
        &DOCTOR_SUMMARY,
        &DOCTOR_PREPARED,
        &math_workshop::messages::DOCTOR_KUBECTL_UNTESTED,
        &DOCTOR_WSL_MNT,
        &DOCTOR_DISK,
        &DOCTOR_DISK_MORE,
        &DOCTOR_CARGO_PATH,
        &DOCTOR_PLUGIN_PATH,
    ];
    let mut wrong = Vec::new();
    for msg in catalogue {
        let key = msg.key.trim_start_matches("DOCTOR_");
        for (lang, words) in [("en", msg.en), ("ja", msg.ja)] {
            let single = format!("{lang}:{key}) echo '{words}' ;;");
            let double = format!("{lang}:{key}) echo \"{words}\" ;;");
            if !text.contains(&single) && !text.contains(&double) {
                wrong.push(format!("{} ({lang})", msg.key));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "workshop/doctor.sh says these otherwise than workshop/kit/src/messages/doctor.rs: {}",
        wrong.join(", ")
    );
}

/// A clone on Windows' disk under WSL (`/mnt/c/...`) builds many times slower than one in the
/// Linux home: the doctor says so, with where to clone instead, and the build should not start.
#[test]
fn a_wsl_clone_under_mnt_c_is_sent_to_the_linux_home() {
    let mut laptop = Laptop::complete(WSL_ARM, &["apt-get"]);
    laptop.clone = Some("/mnt/c/Users/hanako/math-controller");
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let (lines, code) = laptop.doctor(lang);
        assert_eq!(
            lines,
            [
                say(
                    &DOCTOR_WSL_MNT,
                    reader,
                    &[("dir", "/mnt/c/Users/hanako/math-controller")]
                ),
                say(&DOCTOR_SUMMARY, reader, &[("count", "1")]),
            ]
        );
        assert_eq!(code, Some(1));
    }
    // The same folder on plain Linux (a mounted disk) and a WSL clone in the home are fine.
    let mut linux = Laptop::complete(DEBIAN, &["apt-get"]);
    linux.clone = Some("/mnt/c/Users/hanako/math-controller");
    assert_eq!(linux.doctor(ENGLISH).1, Some(0));
    laptop.clone = Some("/home/hanako/math-controller");
    assert_eq!(laptop.doctor(ENGLISH).1, Some(0));
}

/// The day's build takes 2.3 GB (make workshop-prepare, measured): below 4 GB free the doctor
/// says how much there is and how much is needed; with enough it says nothing of disk.
#[test]
fn too_little_free_disk_is_one_line_with_what_is_free() {
    let mut laptop = Laptop::complete(DEBIAN, &["apt-get"]);
    laptop.free_kib = Some(1_572_864); // 1.5 GB
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let (lines, code) = laptop.doctor(lang);
        assert_eq!(
            lines,
            [
                say(
                    &DOCTOR_DISK,
                    reader,
                    &[("free", "1.5 GB"), ("needed", "4 GB")]
                ),
                say(&DOCTOR_SUMMARY, reader, &[("count", "1")]),
            ]
        );
        assert_eq!(code, Some(1));
    }
    laptop.free_kib = Some(20 * 1_048_576);
    assert_eq!(laptop.doctor(ENGLISH).1, Some(0));
}

/// After `make workshop-prepare` the build is on the disk already: 4 GB is what the day takes
/// from a clone with nothing built, so what is built counts, and the doctor (run again, or at
/// the start of a second prepare) does not send a participant to free space the build has
/// rightly used.
#[test]
fn the_disk_check_counts_what_prepare_already_built() {
    let mut laptop = Laptop::complete(DEBIAN, &["apt-get"]);
    laptop.built_kib = Some((2_097_152, 524_288)); // 2 GB of target/workshop, 512 MB of crates
    laptop.free_kib = Some(1_572_864); // 1.5 GB: the 1.5 GB still needed
    let (lines, code) = laptop.doctor(ENGLISH);
    assert_eq!(code, Some(0), "{lines:?}");
    laptop.free_kib = Some(1_048_576); // 1 GB: half a GB short
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let (lines, code) = laptop.doctor(lang);
        assert_eq!(
            lines,
            [
                say(
                    &DOCTOR_DISK_MORE,
                    reader,
                    &[
                        ("free", "1.0 GB"),
                        ("needed", "1.5 GB"),
                        ("built", "2.5 GB")
                    ]
                ),
                say(&DOCTOR_SUMMARY, reader, &[("count", "1")]),
            ]
        );
        assert_eq!(code, Some(1));
    }
}

/// Rust from the standalone installer (the organiser's offline route) is on the PATH, but
/// `~/.cargo/bin`, where `make workshop-prepare` installs `kubectl math`, is not: kubectl would
/// not find the plugin at stage 2. The doctor says so before the build, with the line to run.
#[test]
fn kubectl_math_off_the_path_after_a_standalone_rust_is_named_with_how() {
    let mut laptop = Laptop::complete(DEBIAN, &["apt-get"]);
    laptop.standalone_rust = true;
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let (lines, code) = laptop.doctor(lang);
        let cargo_bin = lines
            .first()
            .and_then(|l| l.split_once("export PATH=\""))
            .and_then(|(_, after)| after.split_once(':'))
            .map(|(dir, _)| dir.to_string())
            .unwrap_or_default();
        assert!(cargo_bin.ends_with("/.cargo/bin"), "{lines:?}");
        assert_eq!(
            lines,
            [
                say(&DOCTOR_PLUGIN_PATH, reader, &[("dir", &cargo_bin)]),
                say(&DOCTOR_SUMMARY, reader, &[("count", "1")]),
            ]
        );
        assert_eq!(code, Some(1));
    }
}

/// rustup put cargo and rustc into ~/.cargo/bin, but this shell's PATH does not have it (a
/// terminal opened before the install): the doctor says that, not "install Rust" again.
#[test]
fn rust_in_cargo_bin_off_the_path_is_named_with_how_to_load_it() {
    let mut laptop = Laptop::complete(DEBIAN, &["apt-get"]).with(RUSTUP);
    laptop.cargo_home_off_path = true;
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let (lines, code) = laptop.doctor(lang);
        assert_eq!(
            lines,
            [
                say(&DOCTOR_CARGO_PATH, reader, &[]),
                say(&DOCTOR_SUMMARY, reader, &[("count", "1")]),
            ]
        );
        assert_eq!(code, Some(1));
    }
}

/// rustup has just put a new Rust into ~/.cargo/bin, but this terminal's PATH still finds the
/// distribution's old rustc: the doctor says how to load the new one, not to install Rust
/// again (which would send the reader round in a circle, as the old rustc stays first).
#[test]
fn a_new_rust_behind_the_distributions_old_one_is_named_with_how_to_load_it() {
    let mut laptop = Laptop::complete(DEBIAN, &["apt-get"]).with((
        "rustc",
        "rustc 1.63.0 (4b91a6ea7 2022-08-08) (built from a source tarball)",
    ));
    laptop.in_cargo_bin_too = Some(RUSTC);
    let (lines, code) = laptop.doctor(ENGLISH);
    assert_eq!(
        lines,
        [
            say(&DOCTOR_CARGO_PATH, Lang::En, &[]),
            say(&DOCTOR_SUMMARY, Lang::En, &[("count", "1")]),
        ]
    );
    assert_eq!(code, Some(1));
}

/// The block after the guide's `<!-- not run: …doctor… -->` marker.
fn guide_example(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
    let mut lines = text.lines().skip_while(|l| {
        !(l.starts_with("<!-- not run:") && l.contains("workshop/tests/doctor.rs"))
    });
    lines
        .by_ref()
        .take_while(|l| !l.starts_with("```"))
        .for_each(drop);
    lines
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_string)
        .collect()
}

/// Both guides show what the doctor prints on a Debian laptop without a C compiler and kubectl.
#[test]
fn the_guides_example_is_what_the_doctor_prints() {
    for (file, lang) in [
        ("workshop/README.md", ENGLISH),
        ("workshop/README.ja.md", "ja_JP.UTF-8"),
    ] {
        let (printed, _) = Laptop::complete(DEBIAN, &["apt-get"])
            .without("cc")
            .without("kubectl")
            .doctor(lang);
        assert_eq!(guide_example(file), printed, "{file}");
    }
}

/// `make workshop-prepare`'s last line: how long it took and what the build and the crates hold
/// on disk (here a target directory of 5 MB and 2 MB of crates, started 125 s before).
#[test]
fn prepare_ends_with_its_time_and_disk() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let target = scratch.path().join("target");
    let registry = scratch.path().join("cargo/registry");
    std::fs::create_dir_all(&target).expect("mkdir");
    std::fs::create_dir_all(&registry).expect("mkdir");
    std::fs::write(target.join("build"), vec![7u8; 5 << 20]).expect("write");
    std::fs::write(registry.join("crates"), vec![7u8; 2 << 20]).expect("write");
    for (lang, reader) in [(ENGLISH, Lang::En), ("ja_JP.UTF-8", Lang::Ja)] {
        let output = Command::new("/bin/sh")
            .arg(script())
            .args(["--footprint", "1000", "1125"])
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_HOME", scratch.path().join("cargo"))
            .env("LANG", lang)
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .output()
            .expect("sh runs");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim_end(),
            say(
                &DOCTOR_PREPARED,
                reader,
                &[
                    ("minutes", "2"),
                    ("seconds", "5"),
                    ("total", "7 MB"),
                    ("target", "5 MB"),
                    ("crates", "2 MB")
                ]
            )
        );
    }
}

/// `make testserver` on the day (the organiser's demo, a participant without a cluster) runs the
/// build `make workshop-prepare` made the night before: the workshop profile, not a second,
/// minutes-long dev build of the test API server.
#[test]
fn make_testserver_runs_what_workshop_prepare_built() {
    let dry_run = |target: &str| {
        let output = Command::new("make")
            .args(["--no-print-directory", "-n", target])
            .current_dir(repository())
            .env_remove("MAKEFLAGS")
            .output()
            .expect("make runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let prepared = dry_run("workshop-prepare");
    assert!(
        prepared.contains("build --locked --profile workshop -p test-apiserver"),
        "{prepared}"
    );
    let served = dry_run("testserver");
    assert!(
        served.contains("run --locked --profile workshop -p test-apiserver"),
        "make testserver runs: {served}"
    );
}
