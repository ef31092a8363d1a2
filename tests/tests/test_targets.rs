//! The workspace's test targets skip what has nothing to run: a library
//! with `test = false` has no unit tests, a binary with `test = false` has
//! none, and a library with `doctest = false` has no Rust example in its
//! docs. Those settings save `cargo test` a compile per target (a test
//! harness of the crate, a rustdoc pass); this test fails as soon as one of
//! them would hide a test, naming the file and line.

use std::path::{Path, PathBuf};

/// The `[lib]` and `[[bin]]` settings of one member's Cargo.toml.
#[derive(Debug, Default, PartialEq)]
struct Targets {
    lib_test: bool,
    lib_doctest: bool,
    /// (path, test) of each `[[bin]]`.
    bins: Vec<(String, bool)>,
}

/// Reads the few keys this test needs from a Cargo.toml (no other key,
/// no inline tables): `test` and `doctest` of `[lib]`, `path` and `test` of
/// each `[[bin]]`.
fn targets(manifest: &str) -> Targets {
    let mut t = Targets {
        lib_test: true,
        lib_doctest: true,
        bins: Vec::new(),
    };
    let mut section = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            if section == "[[bin]]" {
                t.bins.push((String::new(), true));
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim().trim_matches('"'));
        match (section.as_str(), key) {
            ("[lib]", "test") => t.lib_test = value != "false",
            ("[lib]", "doctest") => t.lib_doctest = value != "false",
            ("[[bin]]", "path") => t.bins.last_mut().unwrap().0 = value.to_string(),
            ("[[bin]]", "test") => t.bins.last_mut().unwrap().1 = value != "false",
            _ => {}
        }
    }
    t
}

/// Lines (1-based) of `source` that declare a unit test or a test module.
fn test_lines(source: &str) -> Vec<usize> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            l.starts_with("#[test]")
                || l.starts_with("#[cfg(test)]")
                || l.contains("::test]")
                || l.contains("::test(")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// Lines (1-based) of `source` where a doc comment opens a code block that
/// rustdoc would run as a test (no language, or a Rust one).
fn doc_example_lines(source: &str) -> Vec<usize> {
    let mut open = false;
    let mut found = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let l = line.trim_start();
        let Some(doc) = l.strip_prefix("///").or_else(|| l.strip_prefix("//!")) else {
            continue;
        };
        let Some(tag) = doc.trim().strip_prefix("```") else {
            continue;
        };
        if !open {
            let rust = tag.split(',').map(str::trim).all(|w| {
                w.is_empty()
                    || w == "rust"
                    || w == "no_run"
                    || w == "should_panic"
                    || w == "compile_fail"
                    || w.starts_with("edition")
            });
            if rust {
                found.push(i + 1);
            }
        }
        open = !open;
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("the workspace lists its members");
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(|m| root.join(m))
        .collect()
}

#[test]
fn targets_without_tests_hide_none() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut problems = Vec::new();
    let mut skipped = 0;
    for member in members(root) {
        let t = targets(&std::fs::read_to_string(member.join("Cargo.toml")).unwrap());
        let mut files = Vec::new();
        rust_files(&member.join("src"), &mut files);
        for f in &files {
            let source = std::fs::read_to_string(f).unwrap();
            let shown = f.strip_prefix(root).unwrap().display().to_string();
            let in_bin = t.bins.iter().any(|(p, _)| member.join(p) == *f);
            // Every file but a binary's root belongs to the library (the
            // binaries' own modules are held to the library's rule too).
            let unit_tests_skipped = if in_bin {
                t.bins.iter().any(|(p, test)| member.join(p) == *f && !test)
            } else {
                !t.lib_test
            };
            if unit_tests_skipped {
                skipped += 1;
                for l in test_lines(&source) {
                    problems.push(format!(
                        "{shown}:{l}: a unit test in a target with test = false"
                    ));
                }
            }
            if !t.lib_doctest && !in_bin {
                for l in doc_example_lines(&source) {
                    problems.push(format!(
                        "{shown}:{l}: a doc example in a library with doctest = false"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        skipped > 0,
        "no target skips its test harness: nothing was checked"
    );
}

#[test]
fn the_checks_see_what_they_look_for() {
    let t = targets(
        "[package]\nname = \"x\"\n\n[lib]\ntest = false\ndoctest = false\n\n[[bin]]\nname = \"x\"\npath = \"src/main.rs\"\ntest = false\n\n[[bin]]\nname = \"y\"\npath = \"src/y.rs\"\n",
    );
    assert_eq!(
        t,
        Targets {
            lib_test: false,
            lib_doctest: false,
            bins: vec![("src/main.rs".into(), false), ("src/y.rs".into(), true)],
        }
    );
    let src = "fn a() {}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n    #[tokio::test]\n    async fn u() {}\n}\n";
    assert_eq!(test_lines(src), vec![2, 4, 6]);
    let docs = "/// ```\n/// let x = 1;\n/// ```\n//! ```json\n//! {}\n//! ```\n/// ```rust,no_run\n/// f();\n/// ```\n/// ```text\n/// ```\n";
    assert_eq!(doc_example_lines(docs), vec![1, 7]);
}
