//! The layers of ARCHITECTURE.md, kept: each file of `src/` imports only
//! files of its own layer or of the layers below it, and no files import
//! each other in a cycle (a `mod.rs`'s `pub use` of its own children is a
//! facade, not an import).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first.
const LAYERS: [&str; 8] = [
    "model", "ffi", "runtime", "queue", "engine", "commands", "catalog", "lib",
];

fn layer_of(module: &[String]) -> usize {
    let top = module.first().map(String::as_str).unwrap_or("lib");
    let top = if top == "info" { "lib" } else { top };
    LAYERS
        .iter()
        .position(|l| *l == top)
        .unwrap_or_else(|| panic!("module {module:?} is in no layer"))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are module `a::b`; `src/lib.rs` is the root.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// The file a module path names: the deepest existing prefix of it.
fn resolve(path: &[String], known: &BTreeMap<Vec<String>, PathBuf>) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|m| known.contains_key(m))
}

/// Every `crate::…` and `super::…` path in `text`, as module paths (the
/// first few segments of each).
fn paths(text: &str, here: &[String], is_mod_rs: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `pub use` in a mod.rs re-exports its children: a facade.
    let text: String = text
        .lines()
        .filter(|l| {
            let facade = is_mod_rs
                && l.trim_start().starts_with("pub use ")
                && !l.contains("crate::")
                && !l.contains("super::");
            !facade
        })
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    for (start, base) in [
        ("crate::", Vec::new()),
        ("super::", here[..here.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = text.as_str();
        while let Some(i) = rest.find(start) {
            let before = rest[..i].chars().last();
            rest = &rest[i + start.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut path = base.clone();
            // `super::{a, b::c}`: each item's first segment.
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let first = ident(item.trim());
                    if !first.is_empty() && first != "self" {
                        let mut p = path.clone();
                        p.push(first);
                        out.push(p);
                    }
                }
                continue;
            }
            let mut tail = rest;
            loop {
                let seg = ident(tail);
                if seg.is_empty() {
                    break;
                }
                path.push(seg.clone());
                tail = &tail[seg.len()..];
                match tail.strip_prefix("::") {
                    Some(t) if !t.starts_with('{') => tail = t,
                    _ => break,
                }
            }
            out.push(path);
        }
    }
    out
}

#[test]
fn each_layer_imports_only_those_below_it_and_no_file_imports_in_a_cycle() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let known: BTreeMap<Vec<String>, PathBuf> = all.iter().map(|f| (module_of(f), f.clone())).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let mut upward = Vec::new();
    for (module, file) in &known {
        let text = std::fs::read_to_string(file).unwrap();
        let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
        // `super::` from a mod.rs or lib.rs means the parent of its module.
        let here: Vec<String> = if is_mod_rs {
            let mut h = module.clone();
            h.push("mod".into());
            h
        } else {
            module.clone()
        };
        for path in paths(&text, &here, is_mod_rs) {
            let Some(target) = resolve(&path, &known) else {
                continue;
            };
            if &target == module || target.is_empty() {
                continue;
            }
            if layer_of(&target) > layer_of(module) {
                upward.push(format!("{} imports {}", file.display(), target.join("::")));
            }
            edges.entry(module.clone()).or_default().insert(target);
        }
    }
    assert!(
        upward.is_empty(),
        "imports that go up a layer:\n{}",
        upward.join("\n")
    );
    // A cycle: a file that reaches itself through the imports.
    for start in edges.keys() {
        let mut stack: Vec<(Vec<String>, Vec<String>)> = vec![(start.clone(), vec![start.join("::")])];
        let mut seen = BTreeSet::new();
        while let Some((m, trail)) = stack.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if next == start {
                    panic!("an import cycle: {} -> {}", trail.join(" -> "), start.join("::"));
                }
                if seen.insert(next.clone()) {
                    let mut t = trail.clone();
                    t.push(next.join("::"));
                    stack.push((next.clone(), t));
                }
            }
        }
    }
    // The test reads what it claims: the layers' files were found.
    for layer in &LAYERS[..6] {
        assert!(
            known.keys().any(|m| m.first().map(String::as_str) == Some(layer)),
            "no {layer} files"
        );
    }
}

#[test]
fn only_ffi_holds_unsafe_code_and_every_unsafe_block_says_why() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    for file in all {
        let text = std::fs::read_to_string(&file).unwrap();
        let in_ffi = file.components().any(|c| c.as_os_str() == "ffi");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if !code.contains("unsafe {") && !code.contains("unsafe{") {
                continue;
            }
            assert!(in_ffi, "{}:{}: unsafe outside ffi/", file.display(), i + 1);
            let said =
                lines[..i].iter().rev().take(6).any(|l| l.contains("SAFETY:")) || line.contains("SAFETY:");
            assert!(
                said,
                "{}:{}: an unsafe block without a SAFETY comment",
                file.display(),
                i + 1
            );
        }
    }
}

#[test]
fn no_source_file_is_over_400_lines() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support"),
        &mut all,
    );
    for file in all {
        let n = std::fs::read_to_string(&file).unwrap().lines().count();
        assert!(n <= 400, "{} has {n} lines", file.display());
    }
}

/// `api!` takes an API function as present without checking (`src/ffi/api.rs`):
/// sound only for the functions `missing_api` makes `init` refuse to load
/// without. Every name used with it must be in that list.
#[test]
fn every_api_function_called_unchecked_is_checked_at_load() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let api = std::fs::read_to_string(src().join("ffi/api.rs")).unwrap();
    let list = api.split("check!(").nth(1).expect("missing_api's check! list");
    let list = &list[..list.find(')').unwrap()];
    let checked: BTreeSet<&str> = list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    assert!(checked.len() > 20, "the list was read: {checked:?}");
    let mut used = BTreeSet::new();
    for file in &all {
        let text = std::fs::read_to_string(file).unwrap();
        // Every `api!`, whatever its spacing and delimiters (the macro's own
        // definition is `macro_rules! api`): its argument must be an API
        // function named in full.
        for part in text.split("api!").skip(1) {
            let Some(rest) = part.trim_start().strip_prefix(['(', '[', '{']) else {
                panic!("{}: `api!` without its argument: {:.40}", file.display(), part);
            };
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(
                name.starts_with("RedisModule_"),
                "{}: `api!` of {name:?}, not an API function named in full",
                file.display()
            );
            used.insert(name);
        }
    }
    assert!(used.len() > 20, "the uses were read: {used:?}");
    let unchecked: Vec<&String> = used.iter().filter(|n| !checked.contains(n.as_str())).collect();
    assert!(
        unchecked.is_empty(),
        "called through api! but not checked at load: {unchecked:?}"
    );
}
