//! The contracts' comments say what the code enforces: each typed RPC's
//! comment names the scope of the tool it runs and, under "Required fields",
//! exactly the request fields that the tool's input schema requires; each
//! request field's comment starts with "Required:" for those fields only.
//! Read from the compiled descriptor set (with source comments), the one
//! reflection serves.

use std::collections::{BTreeMap, BTreeSet};

use chataigne_tools::tools::build_catalog;
use prost::Message;
use prost_types::{DescriptorProto, FileDescriptorSet};

const PACKAGE: &str = "chataigne.tools.v1";

/// Field numbers of `FileDescriptorProto` and its children, for source paths.
const MESSAGE_TYPE: i32 = 4;
const SERVICE: i32 = 6;
const METHOD: i32 = 2;
const FIELD: i32 = 2;

/// The contracts of the tool-service: leading comments by source path, every
/// message by full name, and each RPC (`package.Service/Method`) with its
/// request type and comment.
struct Contracts {
    messages: BTreeMap<String, (DescriptorProto, Vec<i32>)>,
    comments: BTreeMap<Vec<i32>, String>,
    rpcs: BTreeMap<String, (String, String)>,
}

fn contracts() -> Contracts {
    let set = FileDescriptorSet::decode(chataigne_proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set decodes");
    let mut messages = BTreeMap::new();
    let mut rpcs = BTreeMap::new();
    let mut comments = BTreeMap::new();
    for (file_index, file) in set.file.iter().enumerate() {
        if file.package() != PACKAGE {
            continue;
        }
        // Paths are per file: prefix them with the file's index.
        let file_index = i32::try_from(file_index).expect("few files");
        for location in file.source_code_info.iter().flat_map(|info| &info.location) {
            if let Some(comment) = &location.leading_comments {
                let mut path = vec![file_index];
                path.extend(&location.path);
                comments.insert(
                    path,
                    comment.split_whitespace().collect::<Vec<_>>().join(" "),
                );
            }
        }
        for (index, message) in file.message_type.iter().enumerate() {
            let path = vec![file_index, MESSAGE_TYPE, i32::try_from(index).expect("few")];
            messages.insert(
                format!(".{PACKAGE}.{}", message.name()),
                (message.clone(), path),
            );
        }
        for (s, service) in file.service.iter().enumerate() {
            for (m, method) in service.method.iter().enumerate() {
                let path = [file_index, SERVICE, s as i32, METHOD, m as i32];
                rpcs.insert(
                    format!("{PACKAGE}.{}/{}", service.name(), method.name()),
                    (method.input_type().to_owned(), path.to_vec()),
                );
            }
        }
    }
    let rpcs = rpcs
        .into_iter()
        .map(|(rpc, (input, path))| {
            let comment = comments.get(&path).cloned().unwrap_or_default();
            (rpc, (input, comment))
        })
        .collect();
    Contracts {
        messages,
        comments,
        rpcs,
    }
}

/// The backquoted names in the "Required fields:" part of an RPC comment
/// (up to its "Rules:" or "Errors:"), kept when they are `fields`.
fn documented_required(comment: &str, fields: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    let start = comment.find("Required fields:")?;
    let part = &comment[start..];
    let end = ["Rules:", "Errors:"]
        .iter()
        .filter_map(|marker| part.find(marker))
        .min()
        .unwrap_or(part.len());
    Some(
        part[..end]
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|name| fields.contains(*name))
            .map(str::to_owned)
            .collect(),
    )
}

#[test]
fn each_typed_rpc_comment_states_the_scope_and_the_required_fields_the_code_enforces() {
    let contracts = contracts();
    let catalog = build_catalog().expect("the catalogue builds");
    assert!(catalog.len() >= 20, "the catalogue was read");
    for entry in &catalog {
        let rpc = entry.spec.rpc;
        let (input, comment) = contracts
            .rpcs
            .get(rpc)
            .unwrap_or_else(|| panic!("{rpc} is in the contracts"));
        assert!(
            comment.contains(&format!("Scope: `{}`", entry.spec.scope)),
            "{rpc}: the comment states the scope {}: {comment}",
            entry.spec.scope
        );
        assert!(
            comment.contains(&format!("MCP tool: {}", entry.spec.name)),
            "{rpc}: the comment names its MCP tool: {comment}"
        );
        let (message, path) = &contracts.messages[input];
        let fields: BTreeSet<String> = message.field.iter().map(|f| f.name().to_owned()).collect();
        let required: BTreeSet<String> = entry.input_schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str())
            .filter(|name| fields.contains(*name))
            .map(str::to_owned)
            .collect();
        let documented = documented_required(comment, &fields)
            .unwrap_or_else(|| panic!("{rpc}: a \"Required fields:\" part: {comment}"));
        assert_eq!(documented, required, "{rpc}: required fields of {comment}");
        if required.is_empty() {
            assert!(
                comment.contains("Required fields: none"),
                "{rpc}: {comment}"
            );
        }
        // Each field of the request says whether it is required.
        for (index, field) in message.field.iter().enumerate() {
            let mut field_path = path.clone();
            field_path.extend([FIELD, index as i32]);
            let field_comment = contracts
                .comments
                .get(&field_path)
                .unwrap_or_else(|| panic!("{input}.{} has a comment", field.name()));
            let says_required = field_comment.starts_with("Required:");
            assert_eq!(
                says_required,
                required.contains(field.name()),
                "{input}.{}: {field_comment}",
                field.name()
            );
        }
    }
}

#[test]
fn the_required_fields_part_is_read_up_to_the_rules() {
    let fields: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let comment = "Scope: `x`. Required fields: `a` (1 to 64) and `b` (not `B_UNSPECIFIED`). \
                   Rules: `c` at most 7. Errors: INVALID_ARGUMENT.";
    assert_eq!(
        documented_required(comment, &fields),
        Some(["a", "b"].map(String::from).into())
    );
    assert_eq!(documented_required("Scope: `x`.", &fields), None);
}
