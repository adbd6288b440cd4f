//! `cargo xtask shape [--crate NAME]... [--max-lines N] [--check]`: the shape of each crate's code,
//! read with syn from its src/ (test modules and test functions left out):
//! - functions longer than N lines (from the `fn` line to the closing brace), longest first;
//! - functions handed both an `OperationLog` and `Results`;
//! - import circles between the crate's files;
//! - imports of items defined in the crate root (lib.rs or main.rs) from its other files.
//!
//! A file depends on another when it names an item defined there with a `crate::`, `super::` or
//! `self::` path (in a `use` or anywhere in the code). A path through a `pub use` leads to the file
//! that defines the item, so a child reached through its parent's re-export is no edge to the
//! parent; a re-export itself is no edge either.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// Crates held to every limit under `--check`; the others fail it only for import circles.
const STRICT: &[&str] = &["ark-server"];

#[derive(clap::Args)]
pub struct ShapeArgs {
    /// A crate to read (repeatable); every crate under crates/ by default
    #[arg(long = "crate", value_name = "NAME")]
    crates: Vec<String>,
    /// Report functions longer than this many lines
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_lines: usize,
    /// Print a summary per crate; fail on any import circle, and on any finding in ark-server
    #[arg(long)]
    check: bool,
}

pub fn run(root: &Path, args: ShapeArgs) -> anyhow::Result<ExitCode> {
    let all = workspace_crates(root)?;
    let chosen: Vec<&(String, PathBuf)> = if args.crates.is_empty() {
        all.iter()
            .filter(|(_, dir)| dir.starts_with("crates"))
            .collect()
    } else {
        let mut chosen = Vec::new();
        for name in &args.crates {
            match all.iter().find(|(n, _)| n == name) {
                Some(found) => chosen.push(found),
                None => bail!(
                    "no workspace crate {name:?}; there are: {}",
                    all.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        chosen
    };
    let mut failed = Vec::new();
    for (name, dir) in chosen {
        let report = analyze(&root.join(dir), dir, name, args.max_lines)?;
        if args.check {
            let failures = report.failures();
            print!("{}", report.render(args.max_lines, &failures));
            if !failures.is_empty() {
                failed.push(format!(
                    "{name} ({})",
                    failures
                        .iter()
                        .map(|s| s.label())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        } else {
            print!("{}", report.render(args.max_lines, &Section::ALL));
        }
    }
    if !failed.is_empty() {
        eprintln!("code shape check failed: {}", failed.join("; "));
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// (package name, directory relative to the root) of every workspace member but fuzz/.
fn workspace_crates(root: &Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut dirs = Vec::new();
    let mut under_crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .context("reading crates/")?
        .filter_map(|entry| entry.ok())
        .map(|entry| Path::new("crates").join(entry.file_name()))
        .collect();
    under_crates.sort();
    dirs.extend(under_crates);
    dirs.extend([PathBuf::from("tests"), PathBuf::from("xtask")]);
    let mut crates = Vec::new();
    for dir in dirs {
        let manifest = root.join(&dir).join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            let name = package_name(&text)
                .with_context(|| format!("no package name in {}", manifest.display()))?;
            crates.push((name, dir));
        }
    }
    Ok(crates)
}

/// The `name` of the `[package]` table (a line scan: the manifests keep it on one line).
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_string());
        }
    }
    None
}

/// What one crate's reading found.
#[derive(Debug)]
pub struct Report {
    name: String,
    /// Functions over the limit, longest first.
    long_fns: Vec<FnInfo>,
    log_and_results: Vec<FnInfo>,
    circles: Vec<Circle>,
    root_imports: Vec<RootImport>,
}

#[derive(Clone, Debug)]
struct FnInfo {
    file: String,
    line: usize,
    name: String,
    lines: usize,
    /// `self` included.
    params: usize,
}

#[derive(Debug)]
struct Circle {
    /// The files of the strongly connected component, by path.
    files: Vec<String>,
    /// One shortest way round, from the first file back to it.
    cycle: Vec<String>,
    /// Each edge inside the component, with the items named along it.
    edges: Vec<(String, String, BTreeSet<String>)>,
}

#[derive(Debug)]
struct RootImport {
    file: String,
    line: usize,
    item: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Section {
    LongFns,
    LogAndResults,
    Circles,
    RootImports,
}

impl Section {
    const ALL: [Section; 4] = [
        Section::LongFns,
        Section::LogAndResults,
        Section::Circles,
        Section::RootImports,
    ];

    fn label(self) -> &'static str {
        match self {
            Section::LongFns => "long functions",
            Section::LogAndResults => "functions taking the log and the results",
            Section::Circles => "import circles",
            Section::RootImports => "imports from the crate root",
        }
    }
}

impl Report {
    /// The sections that fail `--check`.
    fn failures(&self) -> Vec<Section> {
        let mut failures = Vec::new();
        let strict = STRICT.contains(&self.name.as_str());
        if strict && !self.long_fns.is_empty() {
            failures.push(Section::LongFns);
        }
        if strict && !self.log_and_results.is_empty() {
            failures.push(Section::LogAndResults);
        }
        if !self.circles.is_empty() {
            failures.push(Section::Circles);
        }
        if strict && !self.root_imports.is_empty() {
            failures.push(Section::RootImports);
        }
        failures
    }

    fn summary(&self, max_lines: usize) -> String {
        format!(
            "{}: {} functions over {max_lines} lines, {} taking the log and the results, {} import circles, {} imports from the crate root",
            self.name,
            self.long_fns.len(),
            self.log_and_results.len(),
            self.circles.len(),
            self.root_imports.len()
        )
    }

    /// The details of the given sections (those with findings), then the summary line.
    fn render(&self, max_lines: usize, sections: &[Section]) -> String {
        let mut out = String::new();
        let show = |section| sections.contains(&section);
        if show(Section::LongFns) && !self.long_fns.is_empty() {
            let _ = writeln!(out, "{}: functions over {max_lines} lines:", self.name);
            for f in &self.long_fns {
                let _ = writeln!(
                    out,
                    "  {:>4} lines {:>2} params  {}:{}  {}",
                    f.lines, f.params, f.file, f.line, f.name
                );
            }
        }
        if show(Section::LogAndResults) && !self.log_and_results.is_empty() {
            let _ = writeln!(
                out,
                "{}: functions taking both the OperationLog and the Results:",
                self.name
            );
            for f in &self.log_and_results {
                let _ = writeln!(out, "  {}:{}  {}", f.file, f.line, f.name);
            }
        }
        if show(Section::Circles) && !self.circles.is_empty() {
            let _ = writeln!(out, "{}: import circles:", self.name);
            for circle in &self.circles {
                let _ = writeln!(
                    out,
                    "  circle of {} files: {}",
                    circle.files.len(),
                    circle.cycle.join(" -> ")
                );
                for (from, to, items) in &circle.edges {
                    let items: Vec<&str> = items.iter().map(String::as_str).collect();
                    let _ = writeln!(out, "    {from} -> {to} ({})", items.join(", "));
                }
            }
        }
        if show(Section::RootImports) && !self.root_imports.is_empty() {
            let _ = writeln!(
                out,
                "{}: imports of items defined in the crate root:",
                self.name
            );
            for import in &self.root_imports {
                let _ = writeln!(out, "  {}:{}  {}", import.file, import.line, import.item);
            }
        }
        let _ = writeln!(out, "{}", self.summary(max_lines));
        out
    }
}

/// Reads the crate in `dir` (its src/); paths are shown under `shown_as`.
fn analyze(dir: &Path, shown_as: &Path, name: &str, max_lines: usize) -> anyhow::Result<Report> {
    let mut tree = Tree::default();
    for root in ["lib", "main"] {
        let file = dir.join("src").join(format!("{root}.rs"));
        if file.exists() {
            tree.load(&file, format!("{root}.rs"), vec![root.to_string()], dir)?;
        }
    }
    let shown = |file: usize| {
        shown_as
            .join("src")
            .join(&tree.files[file].rel)
            .display()
            .to_string()
    };

    let mut fns: Vec<FnInfo> = Vec::new();
    let mut log_and_results = Vec::new();
    for (id, file) in tree.files.iter().enumerate() {
        for f in &file.fns {
            let info = FnInfo {
                file: shown(id),
                ..f.info.clone()
            };
            if f.takes_log && f.takes_results {
                log_and_results.push(info.clone());
            }
            if info.lines > max_lines {
                fns.push(info);
            }
        }
    }
    fns.sort_by(|a, b| {
        b.lines
            .cmp(&a.lines)
            .then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
    });

    let (edges, root_imports) = tree.edges();
    let root_imports = root_imports
        .into_iter()
        .map(|(file, line, item)| RootImport {
            file: shown(file),
            line,
            item,
        })
        .collect();
    let circles = strongly_connected(tree.files.len(), &edges)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let mut files: Vec<usize> = members.iter().copied().collect();
            files.sort_by_key(|&f| shown(f));
            let cycle = shortest_cycle(files[0], &members, &edges)
                .into_iter()
                .map(shown)
                .collect();
            let mut inside = Vec::new();
            for &from in &files {
                for (&to, items) in &edges[&from] {
                    if members.contains(&to) {
                        inside.push((shown(from), shown(to), items.clone()));
                    }
                }
            }
            inside.sort();
            Circle {
                files: files.into_iter().map(shown).collect(),
                cycle,
                edges: inside,
            }
        })
        .collect();
    Ok(Report {
        name: name.to_string(),
        long_fns: fns,
        log_and_results,
        circles,
        root_imports,
    })
}

/// File -> file it names items of -> those items.
type Graph = BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>;

/// A module's path from its crate root: `["lib", "a", "b"]` for `crate::a::b` of lib.rs.
type ModPath = Vec<String>;

#[derive(Default)]
struct Tree {
    files: Vec<SourceFile>,
    modules: BTreeMap<ModPath, Module>,
}

struct SourceFile {
    path: PathBuf,
    /// Relative to src/, with `/`.
    rel: String,
    refs: Vec<Ref>,
    fns: Vec<FnFound>,
}

#[derive(Default)]
struct Module {
    file: usize,
    /// Items defined in the module, with the file that defines them (a `#[macro_export]` macro
    /// lives in the root module but is defined elsewhere).
    defs: BTreeMap<String, usize>,
    children: BTreeSet<String>,
    uses: Vec<Binding>,
}

/// A name a module-level `use` binds (`None`: a glob), and the path as written.
struct Binding {
    name: Option<String>,
    path: Vec<String>,
}

/// A `crate::`, `self::` or `super::` path in the code.
struct Ref {
    module: ModPath,
    path: Vec<String>,
    line: usize,
    reexport: bool,
}

struct FnFound {
    info: FnInfo,
    takes_log: bool,
    takes_results: bool,
}

enum Resolved {
    Module(ModPath),
    /// An item and the file that defines it.
    Item(ModPath, String, usize),
}

impl Tree {
    fn load(
        &mut self,
        path: &Path,
        rel: String,
        module: ModPath,
        crate_dir: &Path,
    ) -> anyhow::Result<()> {
        if self.files.iter().any(|f| f.path == path) {
            return Ok(());
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let ast = syn::parse_file(&text).with_context(|| format!("parsing {}", path.display()))?;
        let id = self.files.len();
        self.files.push(SourceFile {
            path: path.to_path_buf(),
            rel: rel.clone(),
            refs: Vec::new(),
            fns: Vec::new(),
        });
        // Children of lib.rs, main.rs and mod.rs sit beside them; those of a.rs, in a/.
        let rel_path = Path::new(&rel);
        let child_dir = if matches!(rel.as_str(), "lib.rs" | "main.rs") || rel.ends_with("/mod.rs")
        {
            rel_path.parent().unwrap().to_path_buf()
        } else {
            rel_path.with_extension("")
        };
        self.collect(&ast.items, module.clone(), id, &child_dir, crate_dir)?;

        let mut visitor = Visitor {
            file_name: rel.replace('/', "::"),
            modules: vec![module],
            impls: Vec::new(),
            refs: Vec::new(),
            fns: Vec::new(),
        };
        visitor.visit_file(&ast);
        self.files[id].refs = visitor.refs;
        self.files[id].fns = visitor.fns;
        Ok(())
    }

    /// Registers a module's items, and loads the files of its `mod` declarations.
    fn collect(
        &mut self,
        items: &[syn::Item],
        module: ModPath,
        file: usize,
        child_dir: &Path,
        crate_dir: &Path,
    ) -> anyhow::Result<()> {
        self.modules.entry(module.clone()).or_default().file = file;
        for item in items {
            if is_test(item_attrs(item)) {
                continue;
            }
            let def = |this: &mut Self, name: String| {
                this.modules
                    .get_mut(&module)
                    .unwrap()
                    .defs
                    .insert(name, file);
            };
            match item {
                syn::Item::Mod(m) => {
                    let name = unraw(&m.ident);
                    self.modules
                        .get_mut(&module)
                        .unwrap()
                        .children
                        .insert(name.clone());
                    let mut child = module.clone();
                    child.push(name.clone());
                    let dir = child_dir.join(&name);
                    match &m.content {
                        Some((_, inner)) => self.collect(inner, child, file, &dir, crate_dir)?,
                        None => {
                            let flat = child_dir.join(format!("{name}.rs"));
                            let nested = dir.join("mod.rs");
                            let rel = if crate_dir.join("src").join(&flat).exists() {
                                flat
                            } else {
                                nested
                            };
                            let rel = rel.to_string_lossy().replace('\\', "/");
                            self.load(&crate_dir.join("src").join(&rel), rel, child, crate_dir)?;
                        }
                    }
                }
                syn::Item::Use(u) => {
                    let mut flat = Vec::new();
                    if u.leading_colon.is_none() {
                        flatten_use(&u.tree, &mut Vec::new(), &mut flat);
                    }
                    let entry = self.modules.get_mut(&module).unwrap();
                    for (path, name, _) in flat {
                        if name.as_deref() != Some("_") {
                            entry.uses.push(Binding { name, path });
                        }
                    }
                }
                syn::Item::Macro(m) => {
                    if let Some(ident) = &m.ident {
                        let exported = m.attrs.iter().any(|a| a.path().is_ident("macro_export"));
                        let at = if exported {
                            vec![module[0].clone()]
                        } else {
                            module.clone()
                        };
                        self.modules
                            .entry(at)
                            .or_default()
                            .defs
                            .insert(unraw(ident), file);
                    }
                }
                syn::Item::ForeignMod(f) => {
                    for foreign in &f.items {
                        match foreign {
                            syn::ForeignItem::Fn(x) => def(self, unraw(&x.sig.ident)),
                            syn::ForeignItem::Static(x) => def(self, unraw(&x.ident)),
                            syn::ForeignItem::Type(x) => def(self, unraw(&x.ident)),
                            _ => {}
                        }
                    }
                }
                other => {
                    if let Some(ident) = item_ident(other) {
                        def(self, unraw(ident));
                    }
                }
            }
        }
        Ok(())
    }

    /// A path as written in `module`, made absolute; `None` when it leaves the crate.
    fn absolute(&self, module: &ModPath, path: &[String]) -> Option<ModPath> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some(
                std::iter::once(module[0].clone())
                    .chain(path[1..].iter().cloned())
                    .collect(),
            ),
            "self" => Some(module.iter().chain(&path[1..]).cloned().collect()),
            "super" => {
                let mut base = module.clone();
                let mut rest = path;
                while rest.first().map(String::as_str) == Some("super") {
                    if base.len() <= 1 {
                        return None;
                    }
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                Some(base)
            }
            // A bare path starts at a name of the module (2018 `use` paths), else in a crate.
            _ => {
                let m = self.modules.get(module)?;
                let local = m.children.contains(first)
                    || m.defs.contains_key(first)
                    || m.uses.iter().any(|b| b.name.as_ref() == Some(first));
                local.then(|| module.iter().chain(path).cloned().collect())
            }
        }
    }

    /// What an absolute path names, following `use` bindings to the defining file.
    fn resolve(&self, path: &[String], depth: usize) -> Option<Resolved> {
        let mut module: ModPath = vec![path.first()?.clone()];
        let mut i = 1;
        while i < path.len() {
            let mut next = module.clone();
            next.push(path[i].clone());
            if !self.modules.contains_key(&next) {
                break;
            }
            module = next;
            i += 1;
        }
        if i == path.len() {
            return self
                .modules
                .contains_key(&module)
                .then_some(Resolved::Module(module));
        }
        let name = &path[i];
        let m = self.modules.get(&module)?;
        if let Some(&file) = m.defs.get(name) {
            return Some(Resolved::Item(module, name.clone(), file));
        }
        if depth < 16 {
            if let Some(binding) = m.uses.iter().find(|b| b.name.as_ref() == Some(name)) {
                let mut target = self.absolute(&module, &binding.path)?;
                target.extend(path[i + 1..].iter().cloned());
                return self.resolve(&target, depth + 1);
            }
            for glob in m.uses.iter().filter(|b| b.name.is_none()) {
                let Some(target) = self.absolute(&module, &glob.path) else {
                    continue;
                };
                let Some(g) = self.modules.get(&target) else {
                    continue;
                };
                if g.defs.contains_key(name)
                    || g.children.contains(name)
                    || g.uses.iter().any(|b| b.name.as_ref() == Some(name))
                {
                    let mut target = target.clone();
                    target.extend(path[i..].iter().cloned());
                    return self.resolve(&target, depth + 1);
                }
            }
        }
        // Not found by this reading (made by a macro, say): the module's own file.
        Some(Resolved::Item(module, name.clone(), m.file))
    }

    /// The file graph (each edge with the items named along it), and the imports of items
    /// defined in a crate root by another file: (file, line, item).
    fn edges(&self) -> (Graph, Vec<(usize, usize, String)>) {
        let mut edges: Graph = (0..self.files.len())
            .map(|f| (f, BTreeMap::new()))
            .collect();
        let mut root_imports: BTreeMap<(usize, String), usize> = BTreeMap::new();
        for (from, file) in self.files.iter().enumerate() {
            for r in file.refs.iter().filter(|r| !r.reexport) {
                let Some(absolute) = self.absolute(&r.module, &r.path) else {
                    continue;
                };
                let (to, item) = match self.resolve(&absolute, 0) {
                    Some(Resolved::Module(m)) => (self.modules[&m].file, m.last().unwrap().clone()),
                    Some(Resolved::Item(m, name, to)) => {
                        let root_file = self.modules[&m[..1]].file;
                        if m.len() == 1 && to == root_file && from != root_file {
                            let line = root_imports.entry((from, name.clone())).or_insert(r.line);
                            *line = (*line).min(r.line);
                        }
                        (to, name)
                    }
                    None => continue,
                };
                if to != from {
                    edges
                        .get_mut(&from)
                        .unwrap()
                        .entry(to)
                        .or_default()
                        .insert(item);
                }
            }
        }
        let mut root_imports: Vec<(usize, usize, String)> = root_imports
            .into_iter()
            .map(|((file, item), line)| (file, line, item))
            .collect();
        root_imports.sort_by(|a, b| {
            (&self.files[a.0].rel, a.1, &a.2).cmp(&(&self.files[b.0].rel, b.1, &b.2))
        });
        (edges, root_imports)
    }
}

/// Flattens a use tree into (path, bound name or `None` for a glob, line).
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, usize)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(unraw(&p.ident));
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let line = n.ident.span().start().line;
            if n.ident == "self" {
                // `use a::b::{self}` binds `b`.
                if let Some(last) = prefix.last() {
                    out.push((prefix.clone(), Some(last.clone()), line));
                }
            } else {
                let mut path = prefix.clone();
                path.push(unraw(&n.ident));
                out.push((path, Some(unraw(&n.ident)), line));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(unraw(&r.ident));
            }
            out.push((path, Some(unraw(&r.rename)), r.ident.span().start().line));
        }
        syn::UseTree::Glob(g) => {
            out.push((prefix.clone(), None, g.star_token.spans[0].start().line));
        }
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// Collects the `crate::`/`self::`/`super::` paths of one file, and its functions.
struct Visitor {
    /// The file's path from src/ with `::`: how a free function is named.
    file_name: String,
    /// The module being read: the file's, then any inline module in it.
    modules: Vec<ModPath>,
    /// The type (or trait) whose methods are being read.
    impls: Vec<String>,
    refs: Vec<Ref>,
    fns: Vec<FnFound>,
}

impl Visitor {
    fn module(&self) -> ModPath {
        self.modules.last().unwrap().clone()
    }

    fn add_ref(&mut self, path: Vec<String>, line: usize, reexport: bool) {
        self.refs.push(Ref {
            module: self.module(),
            path,
            line,
            reexport,
        });
    }

    fn add_fn(&mut self, name: String, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = block.brace_token.span.close().end().line;
        let mut takes_log = false;
        let mut takes_results = false;
        for input in &sig.inputs {
            if let syn::FnArg::Typed(typed) = input {
                let mut names = TypeNames::default();
                names.visit_type(&typed.ty);
                takes_log |= names.0.contains("OperationLog");
                takes_results |= names.0.contains("Results");
            }
        }
        self.fns.push(FnFound {
            info: FnInfo {
                file: String::new(),
                line: first,
                name,
                lines: last + 1 - first,
                params: sig.inputs.len(),
            },
            takes_log,
            takes_results,
        });
    }

    /// `crate::`, `self::` and `super::` paths in tokens the parser left alone (macro arguments,
    /// attributes).
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(group) => self.scan_tokens(group.stream()),
                TokenTree::Ident(ident)
                    if ["crate", "self", "super"].contains(&ident.to_string().as_str())
                        && !(i > 0
                            && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$' || p.as_char() == ':')) =>
                {
                    let line = ident.span().start().line;
                    let mut path = vec![ident.to_string()];
                    let mut j = i + 1;
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                    {
                        if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':'
                        {
                            break;
                        }
                        path.push(unraw(next));
                        j += 3;
                    }
                    // A lone `self` is a receiver.
                    if path.len() >= 2 {
                        self.add_ref(path, line, false);
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test(item_attrs(item)) {
            visit::visit_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            let mut module = self.module();
            module.push(unraw(&m.ident));
            self.modules.push(module);
            self.file_name = format!("{}::{}", self.file_name, m.ident);
            for item in items {
                self.visit_item(item);
            }
            self.file_name
                .truncate(self.file_name.len() - m.ident.to_string().len() - 2);
            self.modules.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_some() {
            return;
        }
        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
        let mut flat = Vec::new();
        flatten_use(&u.tree, &mut Vec::new(), &mut flat);
        for (path, _, line) in flat {
            if matches!(
                path.first().map(String::as_str),
                Some("crate" | "self" | "super")
            ) {
                self.add_ref(path, line, reexport);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() >= 2 {
            let first = &path.segments[0].ident;
            if first == "crate" || first == "self" || first == "super" {
                let segments = path.segments.iter().map(|s| unraw(&s.ident)).collect();
                self.add_ref(segments, first.span().start().line, false);
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta {
            self.scan_tokens(list.tokens.clone());
        } else if let syn::Meta::NameValue(nv) = &attr.meta {
            self.visit_expr(&nv.value);
        }
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.scan_tokens(mac.tokens.clone());
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let name = format!("{}::{}", self.file_name, f.sig.ident);
        self.add_fn(name, &f.sig, &f.block);
        // A function nested in this one is free, whatever impl this one is in.
        let impls = std::mem::take(&mut self.impls);
        visit::visit_item_fn(self, f);
        self.impls = impls;
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.impls.push(type_name(&i.self_ty));
        visit::visit_item_impl(self, i);
        self.impls.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.impls.push(unraw(&t.ident));
        visit::visit_item_trait(self, t);
        self.impls.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        let owner = self.impls.last().cloned().unwrap_or_default();
        self.add_fn(format!("{owner}::{}", f.sig.ident), &f.sig, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        if let Some(block) = &f.default {
            let owner = self.impls.last().cloned().unwrap_or_default();
            self.add_fn(format!("{owner}::{}", f.sig.ident), &f.sig, block);
        }
        visit::visit_trait_item_fn(self, f);
    }
}

/// The last segments of every path in a type (`&mut Option<crate::a::Results>`: Option, Results).
#[derive(Default)]
struct TypeNames(BTreeSet<String>);

impl<'ast> Visit<'ast> for TypeNames {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if let Some(last) = path.segments.last() {
            self.0.insert(unraw(&last.ident));
        }
        visit::visit_path(self, path);
    }
}

/// `Foo` for `impl<T> Trait for Foo<T>`; the type's tokens when it is no path.
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| unraw(&s.ident))
            .unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        other => quote_tokens(other),
    }
}

fn quote_tokens(ty: &syn::Type) -> String {
    use quote::ToTokens as _;
    ty.to_token_stream().to_string().replace(' ', "")
}

fn unraw(ident: &proc_macro2::Ident) -> String {
    let name = ident.to_string();
    match name.strip_prefix("r#") {
        Some(raw) => raw.to_string(),
        None => name,
    }
}

/// `#[cfg(test)]` (also inside `all(...)`, not inside `not(...)`) or a test attribute.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.segments.last().is_some_and(|s| s.ident == "test") {
            return true;
        }
        if !path.is_ident("cfg") {
            return false;
        }
        let syn::Meta::List(list) = &attr.meta else {
            return false;
        };
        let words: Vec<String> = flat_idents(list.tokens.clone());
        words.iter().any(|w| w == "test") && !words.iter().any(|w| w == "not")
    })
}

fn flat_idents(tokens: TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => out.push(ident.to_string()),
            TokenTree::Group(group) => out.extend(flat_idents(group.stream())),
            _ => {}
        }
    }
    out
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(x) => &x.attrs,
        syn::Item::Enum(x) => &x.attrs,
        syn::Item::ExternCrate(x) => &x.attrs,
        syn::Item::Fn(x) => &x.attrs,
        syn::Item::ForeignMod(x) => &x.attrs,
        syn::Item::Impl(x) => &x.attrs,
        syn::Item::Macro(x) => &x.attrs,
        syn::Item::Mod(x) => &x.attrs,
        syn::Item::Static(x) => &x.attrs,
        syn::Item::Struct(x) => &x.attrs,
        syn::Item::Trait(x) => &x.attrs,
        syn::Item::TraitAlias(x) => &x.attrs,
        syn::Item::Type(x) => &x.attrs,
        syn::Item::Union(x) => &x.attrs,
        syn::Item::Use(x) => &x.attrs,
        _ => &[],
    }
}

/// The name an item defines in its module (modules, uses and macros aside).
fn item_ident(item: &syn::Item) -> Option<&proc_macro2::Ident> {
    Some(match item {
        syn::Item::Const(x) => &x.ident,
        syn::Item::Enum(x) => &x.ident,
        syn::Item::ExternCrate(x) => x.rename.as_ref().map_or(&x.ident, |(_, r)| r),
        syn::Item::Fn(x) => &x.sig.ident,
        syn::Item::Static(x) => &x.ident,
        syn::Item::Struct(x) => &x.ident,
        syn::Item::Trait(x) => &x.ident,
        syn::Item::TraitAlias(x) => &x.ident,
        syn::Item::Type(x) => &x.ident,
        syn::Item::Union(x) => &x.ident,
        _ => return None,
    })
}

/// Tarjan's strongly connected components.
fn strongly_connected(nodes: usize, edges: &Graph) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a Graph,
        next: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        components: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s
            .edges
            .get(&v)
            .into_iter()
            .flat_map(|t| t.keys().copied())
            .collect();
        for w in targets {
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut state = State {
        edges,
        next: 0,
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        components: Vec::new(),
    };
    for v in 0..nodes {
        if state.index[v].is_none() {
            connect(&mut state, v);
        }
    }
    state.components
}

/// The shortest way from `start` back to it inside `members` (breadth first), both ends included.
fn shortest_cycle(start: usize, members: &BTreeSet<usize>, edges: &Graph) -> Vec<usize> {
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in edges[&v].keys().filter(|w| members.contains(w)) {
            if w == start {
                let mut cycle = vec![start, v];
                let mut at = v;
                while at != start {
                    at = came_from[&at];
                    cycle.push(at);
                }
                cycle.reverse();
                return cycle;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `files` (path under the crate dir, text) into a temporary crate and reads it.
    fn read(files: &[(&str, &str)], max_lines: usize) -> Report {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        analyze(dir.path(), Path::new(""), "demo", max_lines).unwrap()
    }

    #[test]
    fn a_circle_is_found() {
        let report = read(
            &[
                ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
                (
                    "src/b.rs",
                    "pub struct B;\nfn f() -> super::c::C { super::c::C }\n",
                ),
                ("src/c.rs", "pub struct C;\nfn g(_: crate::a::A) {}\n"),
            ],
            100,
        );
        assert_eq!(report.circles.len(), 1, "{report:?}");
        let circle = &report.circles[0];
        assert_eq!(circle.files, ["src/a.rs", "src/b.rs", "src/c.rs"]);
        assert_eq!(
            circle.cycle,
            ["src/a.rs", "src/b.rs", "src/c.rs", "src/a.rs"]
        );
        let rendered = report.render(100, &Section::ALL);
        assert!(rendered.contains("src/a.rs -> src/b.rs (B)"), "{rendered}");
        assert!(rendered.contains("1 import circles"), "{rendered}");
        assert_eq!(report.failures().len(), 1);
    }

    #[test]
    fn a_child_named_through_its_parents_reexport_makes_no_circle() {
        // a.rs names B through m/mod.rs's re-export: an edge to b.rs, not to mod.rs, which
        // itself uses a.rs.
        let report = read(
            &[
                ("src/lib.rs", "pub mod m;\n"),
                (
                    "src/m/mod.rs",
                    "mod a;\nmod b;\npub use b::B;\npub use self::a::A;\n\
                     fn make() -> self::a::A { a::A }\n",
                ),
                (
                    "src/m/a.rs",
                    "use crate::m::B;\npub struct A;\nfn f(_: B) {}\n",
                ),
                ("src/m/b.rs", "pub struct B;\n"),
            ],
            100,
        );
        assert!(report.circles.is_empty(), "{report:?}");
        // The same naming through a plain item of mod.rs is a circle.
        let report = read(
            &[
                ("src/lib.rs", "pub mod m;\n"),
                (
                    "src/m/mod.rs",
                    "mod a;\npub struct Shared;\nfn make() -> self::a::A { a::A }\n",
                ),
                (
                    "src/m/a.rs",
                    "pub struct A;\nfn f(_: crate::m::Shared) {}\n",
                ),
            ],
            100,
        );
        assert_eq!(report.circles.len(), 1, "{report:?}");
        assert_eq!(report.circles[0].files, ["src/m/a.rs", "src/m/mod.rs"]);
    }

    #[test]
    fn a_long_function_is_counted_from_fn_to_brace() {
        let mut body = String::new();
        for i in 0..8 {
            let _ = writeln!(body, "    let _x{i} = {i};");
        }
        let text = format!(
            "pub struct S;\n\nimpl S {{\n    /// Doc.\n    pub fn long(\n        &self,\n        a: u8,\n        b: u8,\n    ) {{\n{body}    }}\n\n    fn short(&self) {{}}\n}}\n\n\
             fn free(a: u8) {{\n{body}}}\n\n#[cfg(test)]\nmod tests {{\n    fn hidden() {{\n{body}{body}    }}\n}}\n"
        );
        let report = read(&[("src/lib.rs", "mod x;\n"), ("src/x.rs", &text)], 9);
        let found: Vec<(&str, usize, usize, usize)> = report
            .long_fns
            .iter()
            .map(|f| (f.name.as_str(), f.lines, f.params, f.line))
            .collect();
        // long: `pub fn long(` on line 5 to its brace on line 18; free: 23 to 32.
        assert_eq!(found, [("S::long", 14, 3, 5), ("x.rs::free", 10, 1, 23)]);
        assert_eq!(report.long_fns[0].file, "src/x.rs");
        let rendered = report.render(9, &Section::ALL);
        assert!(
            rendered.contains("  14 lines  3 params  src/x.rs:5  S::long"),
            "{rendered}"
        );
        assert!(
            rendered.contains("demo: 2 functions over 9 lines"),
            "{rendered}"
        );
    }

    #[test]
    fn a_function_taking_the_log_and_the_results_is_found() {
        let report = read(
            &[
                (
                    "src/lib.rs",
                    "mod records;\nmod work;\npub struct OperationLog;\n",
                ),
                ("src/records.rs", "pub struct Results;\n"),
                (
                    "src/work.rs",
                    "use crate::OperationLog;\n\
                     pub fn both(log: &mut OperationLog, n: u8, r: Option<&mut crate::records::Results>) {}\n\
                     pub fn log_only(log: &mut OperationLog) {}\n\
                     pub struct W;\n\
                     impl W {\n    fn method(&self, pair: (&OperationLog, Vec<Results>)) {}\n}\n",
                ),
            ],
            100,
        );
        let names: Vec<&str> = report
            .log_and_results
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["work.rs::both", "W::method"]);
        assert_eq!(report.log_and_results[0].params, 3);
        // OperationLog is defined in lib.rs: an import from the crate root.
        let roots: Vec<(&str, usize, &str)> = report
            .root_imports
            .iter()
            .map(|i| (i.file.as_str(), i.line, i.item.as_str()))
            .collect();
        assert_eq!(roots, [("src/work.rs", 1, "OperationLog")]);
    }

    #[test]
    fn root_imports_leave_out_modules_and_reexports() {
        let report = read(
            &[
                (
                    "src/lib.rs",
                    "pub mod a;\npub mod b;\npub use a::Thing;\npub struct Error;\n",
                ),
                (
                    "src/a.rs",
                    "pub struct Thing;\npub fn f() -> crate::Error { crate::Error }\n",
                ),
                (
                    "src/b.rs",
                    "use crate::Thing;\nuse crate::a;\npub use crate::Error as E;\n\
                     #[cfg(test)]\nmod tests {\n    use crate::Error;\n}\n",
                ),
            ],
            100,
        );
        let roots: Vec<(&str, usize, &str)> = report
            .root_imports
            .iter()
            .map(|i| (i.file.as_str(), i.line, i.item.as_str()))
            .collect();
        assert_eq!(roots, [("src/a.rs", 2, "Error")]);
        assert!(report.circles.is_empty(), "{report:?}");
    }

    #[test]
    fn paths_in_macros_and_attributes_count() {
        let report = read(
            &[
                ("src/lib.rs", "mod a;\nmod b;\n"),
                (
                    "src/a.rs",
                    "pub fn f() -> u8 { 1 }\nfn g() { println!(\"{}\", crate::b::h()); }\n",
                ),
                (
                    "src/b.rs",
                    "pub fn h() -> u8 { 2 }\n#[derive(Default)]\n#[serde(default = \"x\", with = crate::a::f)]\nstruct S;\n",
                ),
            ],
            100,
        );
        assert_eq!(report.circles.len(), 1, "{report:?}");
    }

    #[test]
    fn package_names_are_read_from_the_package_table() {
        let manifest = "[package]\nname = \"ark-kopia\"\n\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("ark-kopia"));
    }
}
