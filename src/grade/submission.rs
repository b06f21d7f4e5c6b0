//! What is graded: one command line, or a class's submissions, each a program file or a folder
//! holding one. A submission's name (its file's stem, its folder's name) is its row in the
//! gradebook; its command line is its program run by the interpreter its extension names.

use super::GradeError;
use std::path::{Path, PathBuf};

/// One submission: its name and the command line that starts its worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Submission {
    pub name: String,
    pub command: Vec<String>,
}

/// The interpreter of a program file, by its extension (`x.py` → `python3`).
fn interpreter(path: &Path) -> Option<&'static str> {
    match path.extension().and_then(|e| e.to_str())? {
        "py" => Some("python3"),
        "php" => Some("php"),
        "js" | "mjs" | "cjs" => Some("node"),
        "rb" => Some("ruby"),
        "sh" => Some("sh"),
        _ => None,
    }
}

/// The command line for a worker given as a file: its interpreter by extension
/// (`x.py` → `python3 x.py`, `.php` → php, `.js`/`.mjs` → node); anything else as it is.
pub fn worker_command(args: &[String]) -> Result<Vec<String>, GradeError> {
    let first = args.first().ok_or(GradeError::NoWorker)?;
    let interpreter = interpreter(Path::new(first));
    Ok(interpreter.map(str::to_string).into_iter().chain(args.iter().cloned()).collect())
}

/// Are `args` a class's submissions rather than one command line? Yes when there is one
/// folder, or two or more arguments and each is a folder or a program file that exists
/// (`ordlab grade submissions/*`); `--` before them always means one command line.
pub fn is_class(args: &[String], one_command: bool) -> bool {
    if one_command || args.is_empty() {
        return false;
    }
    let submission = |a: &String| {
        let p = Path::new(a);
        p.is_dir() || (p.is_file() && interpreter(p).is_some())
    };
    (args.len() == 1 && Path::new(&args[0]).is_dir()) || (args.len() > 1 && args.iter().all(submission))
}

/// The submissions `args` name: each program file is one; a folder is one if it holds a
/// program (its `main.*`, or its only program file and no folder), else each program file or
/// folder in it is one (`ordlab grade submissions/`). Sorted by name; two with one name are refused.
pub fn submissions(args: &[String]) -> Result<Vec<Submission>, GradeError> {
    let mut out: Vec<(Submission, PathBuf)> = Vec::new();
    let add = |path: &Path, out: &mut Vec<(Submission, PathBuf)>| -> Result<(), GradeError> {
        let s = of_path(path)?;
        if let Some((_, other)) = out.iter().find(|(x, _)| x.name == s.name) {
            return Err(GradeError::Submission(format!(
                "{} and {} are both named {:?}: rename one",
                other.display(),
                path.display(),
                s.name
            )));
        }
        out.push((s, path.to_path_buf()));
        Ok(())
    };
    for a in args {
        let path = Path::new(a);
        if path.is_dir() && program_in(path)?.is_none() {
            let mut entries: Vec<PathBuf> =
                read_dir(path)?.into_iter().filter(|p| p.is_dir() || interpreter(p).is_some()).collect();
            entries.sort();
            if entries.is_empty() {
                return Err(GradeError::Submission(format!(
                    "{a}: no program file (.py, .php, .js, .rb, .sh) or folder in it"
                )));
            }
            for e in entries {
                add(&e, &mut out)?;
            }
        } else {
            add(path, &mut out)?;
        }
    }
    let mut subs: Vec<Submission> = out.into_iter().map(|(s, _)| s).collect();
    subs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(subs)
}

/// One submission from a program file or a folder holding one.
fn of_path(path: &Path) -> Result<Submission, GradeError> {
    let program = if path.is_dir() {
        program_in(path)?.ok_or_else(|| {
            GradeError::Submission(format!(
                "{}: no program in it (one .py, .php, .js, .rb or .sh file, or a main.*)",
                path.display()
            ))
        })?
    } else if path.is_file() {
        path.to_path_buf()
    } else {
        return Err(GradeError::Submission(format!("{}: no such file or folder", path.display())));
    };
    let interpreter = interpreter(&program).ok_or_else(|| {
        GradeError::Submission(format!("{}: not a program file (.py, .php, .js, .rb, .sh)", program.display()))
    })?;
    let name = if path.is_dir() { path.file_name() } else { path.file_stem() };
    let name = name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
    Ok(Submission { name, command: vec![interpreter.to_string(), program.display().to_string()] })
}

/// The program of a folder that is one submission: its `main.*`, or its only program file
/// where it holds no folder (a folder of folders is a class).
fn program_in(dir: &Path) -> Result<Option<PathBuf>, GradeError> {
    let entries = read_dir(dir)?;
    let programs: Vec<&PathBuf> = entries.iter().filter(|p| p.is_file() && interpreter(p).is_some()).collect();
    if let Some(main) = programs.iter().find(|p| p.file_stem().is_some_and(|s| s == "main")) {
        return Ok(Some((*main).clone()));
    }
    let folders = entries.iter().any(|p| p.is_dir());
    Ok((programs.len() == 1 && !folders).then(|| programs[0].clone()))
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, GradeError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| GradeError::Submission(format!("cannot read {}: {e}", dir.display())))?;
    Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_file_gets_its_interpreter_and_a_command_stays_as_it_is() {
        assert_eq!(worker_command(&args(&["c.py", "--cas"])).unwrap(), args(&["python3", "c.py", "--cas"]));
        assert_eq!(worker_command(&args(&["w.js"])).unwrap(), args(&["node", "w.js"]));
        assert_eq!(worker_command(&args(&["php", "c.php"])).unwrap(), args(&["php", "c.php"]));
        assert!(matches!(worker_command(&[]), Err(GradeError::NoWorker)));
    }

    #[test]
    fn files_and_folders_are_submissions_named_by_their_stem_or_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("alice.py"), "").unwrap();
        std::fs::write(d.join("notes.txt"), "").unwrap();
        std::fs::create_dir(d.join("bob")).unwrap();
        std::fs::write(d.join("bob/worker.php"), "").unwrap();
        std::fs::create_dir(d.join("carol")).unwrap();
        std::fs::write(d.join("carol/main.js"), "").unwrap();
        std::fs::write(d.join("carol/util.js"), "").unwrap();
        let folder = d.display().to_string();
        assert!(is_class(&args(&[&folder]), false) && !is_class(&args(&[&folder]), true));
        let subs = submissions(&args(&[&folder])).unwrap();
        let names: Vec<(&str, &str)> = subs.iter().map(|s| (s.name.as_str(), s.command[0].as_str())).collect();
        assert_eq!(names, [("alice", "python3"), ("bob", "php"), ("carol", "node")]);
        assert!(subs[2].command[1].ends_with("carol/main.js"));
        // A file and its arguments are one command line; two program files are a class.
        let alice = d.join("alice.py").display().to_string();
        assert!(!is_class(&args(&[&alice, "--cas"]), false));
        let bob = d.join("bob").display().to_string();
        assert!(is_class(&args(&[&alice, &bob]), false));
        let e = submissions(&args(&[&alice, &alice])).unwrap_err().to_string();
        assert!(e.contains("both named \"alice\""), "{e}");
    }
}
