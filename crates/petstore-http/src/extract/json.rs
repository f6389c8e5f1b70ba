//! A strict JSON body extractor that names the offending field.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use futures_util::StreamExt;
use petstore_domain::ValidationError;
use serde::de::DeserializeOwned;

use crate::connection::BodyRead;
use crate::error::ApiError;

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// How long a request body may take to arrive, once its headers have (`--client-body-timeout`).
/// Registered as app data by `app()`; [`BodyTimeout::default`] when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout(pub Duration);

impl Default for BodyTimeout {
    /// 10 seconds.
    fn default() -> Self {
        Self(Duration::from_secs(10))
    }
}

/// A JSON body deserialised strictly: `415` unless the content type is JSON, `413` past
/// [`MAX_BODY_BYTES`] (checked before reading when `Content-Length` says so), `400` with the
/// field's name for a missing, unknown or mistyped field, and `400 invalid_json` otherwise.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = JsonBytes::from_request(req, payload);
        Box::pin(async move { parse(&bytes.await?.0).map(JsonBody) })
    }
}

/// A JSON body as sent, not yet parsed (for a request whose bytes matter: its idempotency
/// fingerprint): the content type checked (`415`), the size bounded (`413`), and the whole body
/// read within the body timeout (`408`).
#[derive(Debug)]
pub struct JsonBytes(pub Bytes);

impl FromRequest for JsonBytes {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let checked = check_headers(req);
        let BodyTimeout(timeout) = req.app_data::<BodyTimeout>().copied().unwrap_or_default();
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            checked?;
            // A body that stops arriving would hold the connection (and a file descriptor)
            // for as long as the client likes: the whole body must come within the timeout.
            let read = async {
                let mut body = BytesMut::new();
                while let Some(chunk) = payload.next().await {
                    let chunk = chunk.map_err(|e| ApiError::InvalidJson(e.to_string()))?;
                    if body.len() + chunk.len() > MAX_BODY_BYTES {
                        return Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(body.freeze())
            };
            let body = actix_web::rt::time::timeout(timeout, read)
                .await
                .map_err(|_| ApiError::RequestTimeout(timeout))??;
            req.extensions_mut().insert(BodyRead);
            Ok(JsonBytes(body))
        })
    }
}

fn check_headers(req: &HttpRequest) -> Result<(), ApiError> {
    if req.headers().get_all(header::CONTENT_TYPE).nth(1).is_some() {
        return Err(ApiError::RepeatedHeader("Content-Type"));
    }
    let mime = req.mime_type().ok().flatten();
    let is_json = mime.as_ref().is_some_and(|mime| {
        mime.type_() == "application"
            && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json"))
    });
    if !is_json {
        return Err(ApiError::UnsupportedMediaType);
    }
    // JSON is UTF-8 (RFC 8259); a body declared in another charset would be misread.
    if let Some(charset) = mime.as_ref().and_then(|mime| mime.get_param("charset"))
        && !charset.as_str().eq_ignore_ascii_case("utf-8")
        && !charset.as_str().eq_ignore_ascii_case("utf8")
    {
        return Err(ApiError::UnsupportedCharset(charset.as_str().to_owned()));
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        return Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES));
    }
    Ok(())
}

/// Deserialises `body`, turning serde's error into one that names the field.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None => return Err(ApiError::InvalidJson("the body is empty".into())),
        // serde's derived structs also accept a JSON array of the fields in order; the
        // interface's bodies are objects, so anything else is refused up front.
        Some(b'{') => {}
        Some(_) => {
            return Err(ApiError::InvalidJson(
                match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                    Ok(_) => "expected a JSON object".into(),
                    Err(error) => error.to_string(),
                },
            ));
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        describe(path, error.into_inner())
    })?;
    deserializer
        .end()
        .map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    Ok(value)
}

fn describe(path: String, error: serde_json::Error) -> ApiError {
    use serde_json::error::Category;
    // serde's own message, without its "at line 1 column 9" tail.
    let text = error.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(head, _)| head);
    // serde_json reports a number beyond a double's range (`1e400`, a thousand digits) as a
    // syntax error, though the JSON is valid: it is the field's value that is out of range.
    if message == "number out of range" && path != "." {
        return ValidationError::InvalidField {
            field: Cow::Owned(path),
            reason: "is out of range: it must be an int64".into(),
        }
        .into();
    }
    if matches!(
        error.classify(),
        Category::Syntax | Category::Eof | Category::Io
    ) {
        return ApiError::InvalidJson(error.to_string());
    }
    // Each kind of message starts with its kind; the field's name follows as sent, and may
    // itself hold backticks, or the words of another kind.
    if let Some(field) = named(message, "duplicate field `") {
        return ApiError::InvalidJson(format!("the key `{field}` appears more than once"));
    }
    if let Some(field) = named(message, "missing field `") {
        return ValidationError::MissingField(Cow::Owned(field.to_owned())).into();
    }
    if let Some(field) = message.strip_prefix("unknown field `").and_then(|rest| {
        // Then what was expected: the service's own field names, so the last such tail is it.
        let end = rest
            .rfind("`, expected")
            .or_else(|| rest.rfind("`, there are no fields"))?;
        Some(&rest[..end])
    }) {
        let hint = if field == "id" {
            ": ids are assigned by the service"
        } else {
            ""
        };
        return ValidationError::UnknownField {
            field: field.to_owned(),
            hint,
        }
        .into();
    }
    if path == "." {
        // A type error at the top level: the body is JSON but not an object.
        return ApiError::InvalidJson(format!("expected a JSON object: {message}"));
    }
    ValidationError::InvalidField {
        field: Cow::Owned(path),
        reason: format!("is invalid: {message}"),
    }
    .into()
}

/// The name in a message of serde's that is `kind` then the name, closed by a backtick.
fn named<'a>(message: &'a str, kind: &str) -> Option<&'a str> {
    message.strip_prefix(kind)?.strip_suffix('`')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use petstore_domain::NewPet;

    fn code(body: &str) -> (ErrorCode, String) {
        let error = parse::<NewPet>(body.as_bytes()).expect_err(body);
        (error.code(), error.to_string())
    }

    #[test]
    fn body_errors_name_the_field() {
        let thousand_digits = format!(r#"{{"name":"Rex","categoryId":{}}}"#, "9".repeat(1000));
        use ErrorCode::{InvalidField, InvalidJson, MissingField, UnknownField};
        #[rustfmt::skip]
        let cases: [(&str, ErrorCode, &str); _] = [
            ("", InvalidJson, "empty"),
            ("{", InvalidJson, "EOF"),
            ("{\"name\": \"a\",}", InvalidJson, ""),
            ("[1]", InvalidJson, "object"),
            ("\"pet\"", InvalidJson, "object"),
            ("null", InvalidJson, "object"),
            (r#"["Rex", 1]"#, InvalidJson, "object"),
            (r#"{"name":"a","categoryId":1} x"#, InvalidJson, "trailing"),
            (r#"{"categoryId":1}"#, MissingField, "`name`"),
            (r#"{"name":"a"}"#, MissingField, "`categoryId`"),
            (r#"{"id":3,"name":"a","categoryId":1}"#, UnknownField, "`id`"),
            (r#"{"name":"a","categoryId":1,"x":1}"#, UnknownField, "`x`"),
            (r#"{"name":null,"categoryId":1}"#, InvalidField, "`name`"),
            (r#"{"name":"a","categoryId":"1"}"#, InvalidField, "`categoryId`"),
            (r#"{"name":"a","categoryId":1.5}"#, InvalidField, "`categoryId`"),
            (r#"{"name":"a","categoryId":9223372036854775808}"#, InvalidField, "`categoryId`"),
            (r#"{"name":"a","categoryId":1,"status":null}"#, InvalidField, "`status`"),
            (r#"{"name":"a","categoryId":1,"status":"x"}"#, InvalidField, "`status`"),
            // Valid JSON with a value of the wrong type or range: the field is named.
            (r#"{"name":"Rex","categoryId":1,"status":1}"#, InvalidField, "`status`"),
            (r#"{"name":"Rex","categoryId":1,"status":["sold"]}"#, InvalidField, "`status`"),
            (r#"{"name":"Rex","categoryId":1,"status":{"a":1}}"#, InvalidField, "`status`"),
            (r#"{"name":"Rex","categoryId":1e400}"#, InvalidField, "`categoryId`"),
            (r#"{"name":"Rex","categoryId":-1e400}"#, InvalidField, "`categoryId`"),
            (&thousand_digits, InvalidField, "`categoryId`"),
            (r#"{"name":1,"categoryId":1}"#, InvalidField, "`name`"),
            // Keys that quote serde's own messages are still what they are, named as sent.
            (r#"{"name":"a","categoryId":1,"missing field `x":1}"#,
                UnknownField, "`missing field `x`"),
            (r#"{"name":"a","categoryId":1,"duplicate field `x`, expected":1}"#,
                UnknownField, "`duplicate field `x`, expected`"),
            // Duplicate keys: the JSON is ambiguous, and the key is named.
            (r#"{"name":"a","name":"b","categoryId":1}"#,
                InvalidJson, "`name` appears more than once"),
            (r#"{"name":"a","categoryId":1,"status":"sold","status":"sold"}"#,
                InvalidJson, "`status` appears more than once"),
        ];
        for (body, expected, needle) in cases {
            let (got, message) = code(body);
            assert_eq!(got, expected, "{body}: {message}");
            assert!(
                message.contains(needle),
                "{body}: {message:?} lacks {needle:?}"
            );
        }
    }
}
