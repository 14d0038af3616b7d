//! What every tool shares: page limits, the paging arguments of list inputs,
//! cursor binding, owner resolution and bounded summaries.

use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::access::Principal;
use crate::cursor::{Binding, CursorCodec};
use crate::domain::{CurrentState, DomainError, Locale, PageAfter, PageRequest};
use crate::store::GuardedWrite;

use super::{CallContext, ToolOutput, Tools};

/// Default and maximum page sizes (SPEC §6).
pub const DEFAULT_LIMIT: u32 = 20;
pub const MAX_LIMIT: u32 = 50;
/// Text summary bound (SPEC §6).
pub const TEXT_LIMIT: usize = 4 * 1024;

/// Declares a list tool's input: the struct as written, followed by the two
/// paging arguments every list takes, `limit` and `cursor` (described by the
/// literal after the struct), and its [`Paged`] implementation.
macro_rules! paged_input {
    (
        $(#[$attr:meta])*
        pub struct $name:ident { $($field:tt)* }
        cursor: $cursor:literal
    ) => {
        $(#[$attr])*
        pub struct $name {
            $($field)*
            /// Page size; 20 when omitted.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1, max = 50))]
            pub limit: Option<u32>,
            #[doc = $cursor]
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 1024))]
            pub cursor: Option<String>,
        }

        impl $crate::tools::support::Paged for $name {
            fn limit(&self) -> Option<u32> {
                self.limit
            }

            fn cursor(&self) -> Option<&str> {
                self.cursor.as_deref()
            }
        }
    };
}
pub(crate) use paged_input;

/// The paging arguments of a list input (see `paged_input!`).
pub trait Paged {
    fn limit(&self) -> Option<u32>;
    fn cursor(&self) -> Option<&str>;
}

/// The canonical form of a tool's filters: its arguments without `limit` and
/// `cursor`, serialized with sorted keys.
fn fingerprint<T: Serialize>(input: &T) -> String {
    match serde_json::to_value(input) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.remove("limit");
            map.remove("cursor");
            serde_json::Value::Object(map).to_string()
        }
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The paging of one list call: every cursor it reads or writes is bound to
/// the tool, the call's filters (its arguments without `limit` and `cursor`)
/// and the caller, so that the page request and the next cursor agree.
pub struct Pager<'a> {
    tool: &'a str,
    filters: String,
    principal: &'a Principal,
    cursors: &'a CursorCodec,
    ctx: &'a CallContext,
    /// The positions of the records of the page cut by [`Pager::paginate`],
    /// for the cursor that resumes after the last record a summary shows.
    positions: Mutex<Vec<PageAfter>>,
}

impl<'a> Pager<'a> {
    /// The pager of a call of `tool` with `input` as its filters.
    pub fn new<T: Serialize>(
        tool: &'a str,
        input: &T,
        principal: &'a Principal,
        cursors: &'a CursorCodec,
        ctx: &'a CallContext,
    ) -> Pager<'a> {
        Pager {
            tool,
            filters: fingerprint(input),
            principal,
            cursors,
            ctx,
            positions: Mutex::new(Vec::new()),
        }
    }

    fn binding(&self) -> Binding<'_> {
        Binding {
            tool: self.tool,
            filters: &self.filters,
            principal: self.principal,
        }
    }

    /// Validates the page size (20 by default, at most 50) and decodes the
    /// cursor against the binding.
    pub fn request(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageRequest, DomainError> {
        self.request_within(limit, cursor, DEFAULT_LIMIT, MAX_LIMIT)
    }

    /// [`Pager::request`] with the tool's own default and maximum page sizes.
    pub fn request_within(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
        default: u32,
        max: u32,
    ) -> Result<PageRequest, DomainError> {
        let limit = limit.unwrap_or(default);
        if !(1..=max).contains(&limit) {
            return Err(DomainError::invalid(
                "limit",
                format!("must be between 1 and {max}"),
            ));
        }
        let after = match cursor {
            Some(cursor) if !cursor.is_empty() => Some(self.cursors.decode(
                cursor,
                self.binding(),
                self.ctx.now_ms,
            )?),
            _ => None,
        };
        Ok(PageRequest { limit, after })
    }

    /// Cuts a store result of up to `limit + 1` records to one page,
    /// returning the cursor of the next page when there is one.
    pub fn paginate<R>(
        &self,
        mut records: Vec<R>,
        page: &PageRequest,
        position: impl Fn(&R) -> PageAfter,
    ) -> (Vec<R>, Option<String>) {
        let limit = page.limit as usize;
        let more = records.len() > limit;
        records.truncate(limit);
        let positions: Vec<PageAfter> = records.iter().map(position).collect();
        let next = positions
            .last()
            .filter(|_| more)
            .map(|last| self.cursors.encode(last, self.binding(), self.ctx.now_ms));
        *self
            .positions
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = positions;
        (records, next)
    }

    /// A page's output: its summary, one line per record of the page in
    /// order, which names the cursor of the next page or, when lines do not
    /// fit, the cursor that resumes after the last line shown.
    pub fn output<T>(
        &self,
        data: T,
        summary: Summary,
        next_cursor: Option<String>,
    ) -> ToolOutput<T> {
        let positions = std::mem::take(
            &mut *self
                .positions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let resume: Vec<String> = if positions.len() == summary.lines.len() {
            positions
                .iter()
                .map(|p| self.cursors.encode(p, self.binding(), self.ctx.now_ms))
                .collect()
        } else {
            Vec::new()
        };
        ToolOutput {
            text: summary.render_resuming(next_cursor.as_deref(), &resume),
            data,
            next_cursor,
        }
    }
}

impl<S, A> Tools<S, A> {
    /// The pager of a list call of `tool` whose filters are `input`, and the
    /// page its `limit` and `cursor` ask for.
    pub(crate) fn page<'a, T: Serialize + Paged>(
        &'a self,
        tool: &'a str,
        input: &T,
        principal: &'a Principal,
        ctx: &'a CallContext,
    ) -> Result<(Pager<'a>, PageRequest), DomainError> {
        let pager = Pager::new(tool, input, principal, &self.cursors, ctx);
        let page = pager.request(input.limit(), input.cursor())?;
        Ok((pager, page))
    }
}

/// The text of a result that carries the answer to a model that reads only
/// the text: a head, one line per record (or value), and the cursor of the
/// next page, within [`TEXT_LIMIT`]. The lines that do not fit are counted
/// and the truncation is stated with the cursor that resumes after the last
/// line shown (a page's summary, see [`Pager::output`]) and the request that
/// shows them all (a smaller `limit`, or a filter); the next page's cursor
/// is then left out, since it would skip the records not shown.
#[derive(Debug)]
pub struct Summary {
    locale: Locale,
    head: String,
    lines: Vec<String>,
    /// What narrows the request besides a smaller limit, in the caller's
    /// language (e.g. "a statuses filter").
    narrow: Option<String>,
    /// What the cursor continues to ("older messages"), when not "the next page".
    next: Option<String>,
}

impl Summary {
    pub fn new(locale: Locale, head: impl Into<String>) -> Summary {
        Summary {
            locale,
            head: head.into(),
            lines: Vec::new(),
            narrow: None,
            next: None,
        }
    }

    /// Adds a record's line (without its leading break).
    pub fn line(&mut self, line: impl Into<String>) -> &mut Summary {
        self.lines.push(line.into());
        self
    }

    /// Names the filter that narrows the request: `fr` or `en` by locale.
    pub fn narrow(&mut self, fr: &str, en: &str) -> &mut Summary {
        self.narrow = Some(self.locale.pick(fr, en).to_owned());
        self
    }

    /// Names what the cursor leads to: `fr` or `en` by locale.
    pub fn next(&mut self, fr: &str, en: &str) -> &mut Summary {
        self.next = Some(self.locale.pick(fr, en).to_owned());
        self
    }

    fn cursor_line(&self, cursor: &str) -> String {
        match (self.locale, &self.next) {
            (Locale::Fr, Some(next)) => {
                format!("\n{next} : rappeler avec les mêmes arguments et cursor \"{cursor}\".")
            }
            (Locale::Fr, None) => {
                format!("\nPage suivante : rappeler avec les mêmes filtres et cursor \"{cursor}\".")
            }
            (_, Some(next)) => {
                format!("\n{next}: call again with the same arguments and cursor \"{cursor}\".")
            }
            (_, None) => {
                format!("\nNext page: call again with the same filters and cursor \"{cursor}\".")
            }
        }
    }

    /// The statement of a cut: how many lines are not shown, the cursor
    /// that resumes after the last one shown (a page's summary), and the
    /// limit that shows a whole page.
    fn truncation_line(&self, shown: usize, hidden: usize, resume: Option<&str>) -> String {
        let limit = shown.max(1);
        let narrow = self.narrow.as_deref();
        match self.locale {
            Locale::Fr => format!(
                "\n{hidden} ligne(s) de plus non affichée(s) ici (limite de texte de 4 Kio ; \
                 elles sont dans le contenu structuré).{} Pour tout lire ici : rappeler avec \
                 limit {limit}{}.",
                resume
                    .map(|c| format!(
                        " Pour reprendre après la dernière affichée : rappeler avec les mêmes \
                         arguments et cursor \"{c}\"."
                    ))
                    .unwrap_or_default(),
                narrow.map(|n| format!(" ou avec {n}")).unwrap_or_default()
            ),
            Locale::En => format!(
                "\n{hidden} more line(s) not shown here (4 KiB text limit; they are in the \
                 structured content).{} To read them all here: call again with limit {limit}{}.",
                resume
                    .map(|c| format!(
                        " To resume after the last one shown: call again with the same \
                         arguments and cursor \"{c}\"."
                    ))
                    .unwrap_or_default(),
                narrow.map(|n| format!(" or with {n}")).unwrap_or_default()
            ),
        }
    }

    /// The text: every line that fits, then the cursor line or, when lines
    /// were left out, the truncation and how to narrow the request.
    pub fn render(self, next_cursor: Option<&str>) -> String {
        self.render_resuming(next_cursor, &[])
    }

    /// [`Summary::render`] where `resume[n]` is the cursor that continues
    /// after line `n` (empty when lines have no position).
    fn render_resuming(self, next_cursor: Option<&str>, resume: &[String]) -> String {
        let cursor = next_cursor
            .filter(|c| !c.is_empty())
            .map(|c| self.cursor_line(c))
            .unwrap_or_default();
        let total = self.lines.len();
        let full = self.head.len() + self.lines.iter().map(|l| l.len() + 1).sum::<usize>();
        if full + cursor.len() <= TEXT_LIMIT {
            let mut text = self.head;
            for line in &self.lines {
                text.push('\n');
                text.push_str(line);
            }
            text.push_str(&cursor);
            return text;
        }
        // Room kept for the longest statement of a cut.
        let longest = resume.iter().max_by_key(|c| c.len()).map(String::as_str);
        let ending = self.truncation_line(total, total, longest).len();
        let mut text = self.head.clone();
        let mut shown: usize = 0;
        for line in &self.lines {
            if text.len() + 1 + line.len() + ending > TEXT_LIMIT {
                break;
            }
            text.push('\n');
            text.push_str(line);
            shown += 1;
        }
        let after = shown
            .checked_sub(1)
            .and_then(|last| resume.get(last))
            .map(String::as_str);
        text.push_str(&self.truncation_line(shown, total - shown, after));
        text
    }
}

/// The record a guarded write left, or its refusal: not found, or a
/// mismatch naming the state found instead, as `state` tells it from the
/// current record.
pub fn settled<R>(
    write: GuardedWrite<R>,
    state: impl FnOnce(R) -> Result<CurrentState, DomainError>,
) -> Result<R, DomainError> {
    match write {
        GuardedWrite::Updated(record) => Ok(record),
        GuardedWrite::Mismatch(current) => Err(DomainError::ExpectedStateMismatch(state(current)?)),
        GuardedWrite::Missing => Err(DomainError::NotFound),
    }
}

/// Cuts `text` to the summary bound on a character boundary.
pub fn bound_text(mut text: String) -> String {
    if text.len() > TEXT_LIMIT {
        let mut end = TEXT_LIMIT - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_bounded_on_a_char_boundary() {
        let long = "é".repeat(5000);
        let bounded = bound_text(long);
        assert!(bounded.len() <= TEXT_LIMIT);
        assert!(bounded.ends_with('…'));
        assert_eq!(bound_text("short".into()), "short");
    }

    #[test]
    fn a_summary_that_fits_carries_every_line_and_the_cursor() {
        let mut summary = Summary::new(Locale::En, "2 order(s).");
        summary.line("- A (ord_1)").line("- B (ord_2)");
        let text = summary.render(Some("abc"));
        assert_eq!(
            text,
            "2 order(s).\n- A (ord_1)\n- B (ord_2)\nNext page: call again with the same \
             filters and cursor \"abc\"."
        );
        let last = Summary::new(Locale::Fr, "0 commande.").render(None);
        assert_eq!(last, "0 commande.");
    }

    #[test]
    fn a_french_summary_speaks_french_and_resumes_after_its_last_line() {
        let mut summary = Summary::new(Locale::Fr, "50 article(s).");
        for n in 0..50 {
            summary.line(format!("- article {n:02} {}", "x".repeat(150)));
        }
        let resume: Vec<String> = (0..50).map(|n| format!("after{n:02}")).collect();
        let text = summary.render_resuming(Some("suivante"), &resume);
        assert!(text.len() <= TEXT_LIMIT, "{}", text.len());
        let shown = text.lines().filter(|l| l.starts_with("- article")).count();
        assert!(
            text.contains(&format!(
                "{} ligne(s) de plus non affichée(s) ici (limite de texte de 4 Kio ; elles sont \
                 dans le contenu structuré). Pour reprendre après la dernière affichée : \
                 rappeler avec les mêmes arguments et cursor \"after{:02}\". Pour tout lire ici : \
                 rappeler avec limit {shown}.",
                50 - shown,
                shown - 1
            )),
            "{text}"
        );
        assert!(!text.contains("suivante"), "{text}");
    }

    #[test]
    fn a_summary_too_long_states_the_truncation_and_the_limit_that_fits() {
        let mut summary = Summary::new(Locale::En, "50 item(s).");
        for n in 0..50 {
            summary.line(format!("- item {n:02} {}", "x".repeat(150)));
        }
        summary.narrow("un filtre", "a category_id filter");
        let text = summary.render(Some("cursor123"));
        assert!(text.len() <= TEXT_LIMIT, "{}", text.len());
        let shown = text.lines().filter(|l| l.starts_with("- item")).count();
        assert!(shown > 10 && shown < 50, "{shown}");
        assert!(
            text.contains(&format!(
                "{} more line(s) not shown here (4 KiB text limit; they are in the structured \
                 content). To read them all here: call again with limit {shown} or with a \
                 category_id filter.",
                50 - shown
            )),
            "{text}"
        );
        assert!(
            !text.contains("cursor123"),
            "the cursor would skip lines: {text}"
        );
    }

    #[test]
    fn fingerprint_ignores_paging_fields_and_key_order() {
        let a =
            serde_json::json!({"status": ["ready"], "limit": 5, "cursor": "x", "location_id": "l"});
        let b = serde_json::json!({"location_id": "l", "status": ["ready"]});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let c = serde_json::json!({"location_id": "m", "status": ["ready"]});
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
