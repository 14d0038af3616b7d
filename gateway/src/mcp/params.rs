//! Typed `params` of the methods the gateway serves. Fields are read
//! leniently ([`Field`]) so that each method answers a wrong field with the
//! same invalid-params message as it always has, checked in a fixed order
//! rather than the order the client wrote them in.

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::{Map, Value};

use crate::error::GatewayError;
use crate::wire::jsonrpc::Id;

/// One field of a params object: absent, of the expected type, or not.
#[derive(Debug, Default, PartialEq)]
pub enum Field<T> {
    #[default]
    Absent,
    Valid(T),
    /// Present with another JSON type (`null` included).
    Invalid,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(serde_json::from_value(value).map_or(Field::Invalid, Field::Valid))
    }
}

impl<T> Field<T> {
    /// The value when valid.
    pub fn valid(self) -> Option<T> {
        match self {
            Field::Valid(value) => Some(value),
            Field::Absent | Field::Invalid => None,
        }
    }

    /// A reference to the value when valid.
    pub fn as_valid(&self) -> Option<&T> {
        match self {
            Field::Valid(value) => Some(value),
            Field::Absent | Field::Invalid => None,
        }
    }
}

/// Params of a method that takes none of its own (`ping`); any object is accepted.
#[derive(Debug, serde::Deserialize)]
pub struct NoParams {}

/// `initialize`: only the requested protocol version is read.
#[derive(Debug, serde::Deserialize)]
pub struct InitializeParams {
    #[serde(rename = "protocolVersion", default)]
    pub protocol_version: Field<String>,
}

/// `tools/list`: a `cursor` is accepted and ignored (the list is never paginated).
#[derive(Debug, serde::Deserialize)]
pub struct ListToolsParams {}

/// `resources/list`: a `cursor` is accepted and ignored (the list is never paginated).
#[derive(Debug, serde::Deserialize)]
pub struct ListResourcesParams {}

/// `resources/read`.
#[derive(Debug, serde::Deserialize)]
pub struct ReadResourceParams {
    #[serde(default)]
    pub uri: Field<String>,
}

/// `tools/call`.
#[derive(Debug)]
pub struct CallToolParams {
    pub name: Field<String>,
    pub arguments: Field<Map<String, Value>>,
    /// Request metadata: an open object (only `user_locale` is read).
    pub meta: Field<Map<String, Value>>,
}

impl CallToolParams {
    /// The params of a call, taken out of the parsed message as they are:
    /// the arguments object is moved, never copied or parsed again (it is
    /// serialized once, for the tool-service).
    pub fn take(id: &Id, params: Option<Value>) -> Result<CallToolParams, GatewayError> {
        let mut object = match params {
            None => Map::new(),
            Some(Value::Object(object)) => object,
            Some(_) => {
                return Err(GatewayError::InvalidParams(
                    id.clone(),
                    "params must be an object".to_owned(),
                ));
            }
        };
        let object_field = |value: Option<Value>| match value {
            None => Field::Absent,
            Some(Value::Object(object)) => Field::Valid(object),
            Some(_) => Field::Invalid,
        };
        Ok(CallToolParams {
            name: match object.remove("name") {
                None => Field::Absent,
                Some(Value::String(name)) => Field::Valid(name),
                Some(_) => Field::Invalid,
            },
            arguments: object_field(object.remove("arguments")),
            meta: object_field(object.remove("_meta")),
        })
    }
}

/// The typed `params` of a request; absent means empty, and anything but an
/// object is refused.
pub fn parse<T: DeserializeOwned>(id: &Id, params: Option<Value>) -> Result<T, GatewayError> {
    let not_an_object =
        || GatewayError::InvalidParams(id.clone(), "params must be an object".to_owned());
    let object = match params {
        None => Map::new(),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(not_an_object()),
    };
    serde_json::from_value(Value::Object(object)).map_err(|_| not_an_object())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(params: Value) -> CallToolParams {
        CallToolParams::take(&Id::Number(1.into()), Some(params)).unwrap()
    }

    #[test]
    fn fields_are_told_absent_valid_or_invalid() {
        let params = call(json!({"name": "t", "arguments": null, "_meta": []}));
        assert_eq!(params.name, Field::Valid("t".to_owned()));
        assert_eq!(params.arguments, Field::Invalid);
        assert_eq!(params.meta, Field::Invalid);
        let empty = call(json!({}));
        assert_eq!(empty.name, Field::Absent);
        assert_eq!(empty.arguments, Field::Absent);
        let full = call(json!({"name": 3, "arguments": {"limit": 2}, "_meta": {"a": 1}}));
        assert_eq!(full.name, Field::Invalid);
        assert_eq!(
            full.arguments,
            Field::Valid(json!({"limit": 2}).as_object().unwrap().clone())
        );
        assert!(matches!(
            CallToolParams::take(&Id::Number(1.into()), Some(json!(["x"]))),
            Err(GatewayError::InvalidParams(_, message)) if message == "params must be an object"
        ));
    }

    #[test]
    fn params_must_be_an_object_when_present() {
        let id = Id::Number(1.into());
        assert!(parse::<NoParams>(&id, None).is_ok());
        assert!(parse::<NoParams>(&id, Some(json!({"cursor": 3}))).is_ok());
        for bad in [json!([]), json!(["2025-11-25"])] {
            assert!(matches!(
                parse::<InitializeParams>(&id, Some(bad)),
                Err(GatewayError::InvalidParams(_, message)) if message == "params must be an object"
            ));
        }
    }
}
