//! Reconstructing each process's full environment from `env-diff`s.
//!
//! tracekit writes every `env-diff` against the parent's environment
//! ([`EnvBase::Parent`], `kwinject.md` §4.4 reading (b)); traces written
//! against the top-level `env` ([`EnvBase::TopLevel`], reading (a)) fold
//! with that option. A process whose parent is missing folds from the
//! top-level `env` (the documented meaning of a missing `parent_id`).

use std::collections::HashMap;
use std::rc::Rc;

use tracekit_core::{Position, Warnings};

use crate::trace::{Env, EnvDiff, Process};

/// What an `env-diff` is a difference against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EnvBase {
    /// The parent's environment, folded down the parent chain (default).
    #[default]
    Parent,
    /// The top-level `env` for every record.
    TopLevel,
}

/// Folds environments record by record, in trace order. Memory: one shared
/// environment per distinct id seen (children share unchanged maps).
pub struct EnvFolder {
    base: Rc<Env>,
    mode: EnvBase,
    /// The latest record with each id: its environment and parent id.
    by_id: HashMap<i64, (Rc<Env>, Option<i64>)>,
    /// Ids already warned about, so one collision gives one warning.
    collided: std::collections::HashSet<i64>,
    unknown_parents: u64,
}

impl EnvFolder {
    pub fn new(top_level: Env, mode: EnvBase) -> Self {
        EnvFolder {
            base: Rc::new(top_level),
            mode,
            by_id: HashMap::new(),
            collided: Default::default(),
            unknown_parents: 0,
        }
    }

    /// How many records named a parent that no earlier record has.
    pub fn unknown_parents(&self) -> u64 {
        self.unknown_parents
    }

    /// The full environment of `p`; call in trace order. Ambiguities go
    /// to `warnings`: an id that appears again with a different (or no)
    /// parent is a collision (merged traces), not an exec without fork;
    /// its children fold from the latest record with that id.
    pub fn fold(&mut self, p: &Process, warnings: &mut Warnings) -> Rc<Env> {
        let parent_env = match (self.mode, p.parent()) {
            (EnvBase::TopLevel, _) | (_, None) => self.base.clone(),
            (EnvBase::Parent, Some(pid)) => match self.by_id.get(&pid) {
                Some((env, _)) => env.clone(),
                None => {
                    self.unknown_parents += 1;
                    self.base.clone()
                }
            },
        };
        let env = apply(&parent_env, &p.env_diff);
        if let Some((_, prev_parent)) = self.by_id.get(&p.id) {
            let same_chain = prev_parent.is_some() && *prev_parent == p.parent();
            let reexec_of_root = p.parent_id == Some(-1) && prev_parent.is_none();
            if !same_chain && !reexec_of_root && self.collided.insert(p.id) {
                warnings.push(
                    Position::Line(p.line),
                    format!(
                        "id {} is used again by a record with another or no parent \
                         (merged traces?); its children fold from the latest one",
                        p.id
                    ),
                );
            }
        }
        self.by_id.insert(p.id, (env.clone(), p.parent()));
        env
    }
}

fn apply(parent: &Rc<Env>, diff: &EnvDiff) -> Rc<Env> {
    let changes = diff
        .iter()
        .any(|(k, v)| parent.get(k).map(String::as_str) != v.as_deref());
    if !changes {
        return parent.clone();
    }
    let mut env = (**parent).clone();
    for (k, v) in diff {
        match v {
            Some(v) => {
                env.insert(k.clone(), v.clone());
            }
            None => {
                env.remove(k);
            }
        }
    }
    Rc::new(env)
}

/// The `env-diff` that turns `parent` into `child` (`None` = removed).
pub fn diff(parent: &Env, child: &Env) -> EnvDiff {
    let mut d = EnvDiff::new();
    for (k, v) in child {
        if parent.get(k) != Some(v) {
            d.insert(k.clone(), Some(v.clone()));
        }
    }
    for k in parent.keys() {
        if !child.contains_key(k) {
            d.insert(k.clone(), None);
        }
    }
    d
}
