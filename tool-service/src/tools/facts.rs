//! A tool's static facts beyond its name, scope and class, declared on the
//! tool itself (`ToolSpec::facts`), so that no table elsewhere is keyed by
//! a tool's name: the argument values naming an operation this server
//! leaves out, what a write changes and the read tool that shows it, the
//! identifiers a list tool is the source of, and the view that shows its
//! results.

use super::ToolId;
use super::views::View;
use crate::domain::AbsentOperation;

/// Everything a tool declares besides its identity and class.
#[derive(Debug, Clone, Copy)]
pub struct ToolFacts {
    /// Argument values that name an operation left out on purpose (seed
    /// 001), compared trimmed and case-insensitively: refused as not
    /// available here, whatever the rest of the call says.
    pub absent: &'static [AbsentValues],
    /// What a write changes, for the messages that say how to read it again.
    pub effect: Option<WriteEffect>,
    /// The identifier arguments whose valid values this tool lists.
    pub lists_ids: &'static [&'static str],
    /// The MCP Apps view that shows this tool's results, if any.
    pub view: Option<&'static View>,
}

impl ToolFacts {
    /// No fact beyond the tool's declaration.
    pub const NONE: ToolFacts = ToolFacts {
        absent: &[],
        effect: None,
        lists_ids: &[],
        view: None,
    };
}

/// Values of one argument that name an absent operation.
#[derive(Debug, Clone, Copy)]
pub struct AbsentValues {
    pub argument: &'static str,
    /// Lower case.
    pub values: &'static [&'static str],
    pub operation: AbsentOperation,
}

/// What a write changes.
#[derive(Debug, Clone, Copy)]
pub struct WriteEffect {
    /// The read tool that shows what the write changed ("read the state
    /// before any retry").
    pub read_with: ToolId,
    /// The observed state that guards the write, if any.
    pub guard: Option<StateGuard>,
}

impl WriteEffect {
    /// A write whose effect `tool` shows, guarded by no observed state.
    pub const fn read_with(tool: ToolId) -> WriteEffect {
        WriteEffect {
            read_with: tool,
            guard: None,
        }
    }
}

/// The observed state a write is guarded by.
#[derive(Debug, Clone, Copy)]
pub struct StateGuard {
    /// What changed, in the model's terms ("The order").
    pub what: &'static str,
    /// The argument that carries the observed state.
    pub argument: &'static str,
    pub lifecycle: Lifecycle,
}

/// Whether a refusal names the states reachable from the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// The state follows a lifecycle: the states reachable are named.
    Named,
    /// Any state may follow any other.
    Unnamed,
}

impl AbsentValues {
    /// Whether `value` (as passed) is one of these values.
    pub fn names(&self, value: &str) -> bool {
        let value = value.trim().to_ascii_lowercase();
        self.values.contains(&value.as_str())
    }
}
