//! The browser side of `smoke-test`: a client that keeps cookies and does not
//! follow redirects, and the reading of the sign-in and consent pages' forms
//! and of the link that hands the code back.

use anyhow::Context;

/// One answer of the authorization server.
pub struct Page {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
}

impl Page {
    /// The start of the page's text, for an error message.
    pub fn summary(&self) -> String {
        self.body.chars().take(300).collect()
    }
}

/// An HTTP client that keeps the cookies it is given (by name, whatever
/// their attributes) and does not follow redirects.
pub struct Browser {
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
}

impl Browser {
    pub fn new() -> anyhow::Result<Browser> {
        Ok(Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?,
            cookies: Vec::new(),
        })
    }

    pub async fn get(&mut self, url: url::Url) -> anyhow::Result<Page> {
        let request = self.http.get(url.clone());
        self.send(request, &url).await
    }

    pub async fn post(&mut self, url: url::Url, form: &[(String, String)]) -> anyhow::Result<Page> {
        let request = self.http.post(url.clone()).form(form);
        self.send(request, &url).await
    }

    async fn send(
        &mut self,
        mut request: reqwest::RequestBuilder,
        url: &url::Url,
    ) -> anyhow::Result<Page> {
        if !self.cookies.is_empty() {
            let header: Vec<String> = self
                .cookies
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect();
            request = request.header("cookie", header.join("; "));
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("reaching {}", url.path()))?;
        for value in response.headers().get_all("set-cookie") {
            let Ok(value) = value.to_str() else { continue };
            let pair = value.split(';').next().unwrap_or_default();
            if let Some((name, value)) = pair.split_once('=') {
                let name = name.trim().to_owned();
                self.cookies.retain(|(kept, _)| *kept != name);
                self.cookies.push((name, value.trim().to_owned()));
            }
        }
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await?;
        Ok(Page {
            status,
            location,
            body,
        })
    }
}

/// The value of attribute `name` in the tag text `tag`.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = tag[start..].find('"')? + start;
    Some(unescape(&tag[start..end]))
}

/// Undoes the escaping of the authorization server's pages.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The form of `html` whose id is `id` (a page may carry several, e.g. the
/// consent page's "switch account"): its action (resolved against `page`)
/// and its hidden fields.
pub fn form_of(
    html: &str,
    page: &url::Url,
    id: &str,
) -> anyhow::Result<(url::Url, Vec<(String, String)>)> {
    let form = html
        .match_indices("<form")
        .map(|(start, _)| &html[start..])
        .find(|form| {
            form.find('>')
                .and_then(|end| attribute(&form[..end], "id"))
                .is_some_and(|found| found == id)
        })
        .with_context(|| format!("the page has no form {id}"))?;
    let head = &form[..form.find('>').context("unterminated form tag")?];
    let action = attribute(head, "action").context("the form has no action")?;
    let end = form.find("</form>").unwrap_or(form.len());
    let fields = form[..end]
        .split("<input")
        .skip(1)
        .filter_map(|tag| {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            if attribute(tag, "type").as_deref() != Some("hidden") {
                return None;
            }
            Some((attribute(tag, "name")?, attribute(tag, "value")?))
        })
        .collect();
    Ok((page.join(&action)?, fields))
}

/// Where the consent's answer sends the browser back (the client's redirect
/// URI with the code, or with the error).
pub fn continue_link(html: &str) -> anyhow::Result<String> {
    let start = html
        .find("id=\"continue\"")
        .context("the consent's answer has no link back to the client")?;
    let tag = &html[start..];
    let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
    attribute(tag, "href").context("the link back has no address")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_fields_and_the_action_of_the_named_form_are_read_unescaped() {
        let html = "<p>x</p><form method=\"post\" action=\"/authorize/switch\" id=\"switch\">\
<input type=\"hidden\" name=\"csrf\" value=\"other\"></form>\
<form method=\"post\" action=\"/authorize/login\" id=\"sign-in\">\
<input type=\"hidden\" name=\"state\" value=\"a&amp;b&quot;\">\
<input type=\"email\" id=\"email\" name=\"email\" required>\
<input type=\"hidden\" name=\"csrf\" value=\"c1\"></form>\
<form action=\"/other\"><input type=\"hidden\" name=\"no\" value=\"no\"></form>";
        let page = url::Url::parse("https://auth.example/authorize?x=1").unwrap();
        let (action, fields) = form_of(html, &page, "sign-in").unwrap();
        assert_eq!(action.as_str(), "https://auth.example/authorize/login");
        assert_eq!(
            fields,
            vec![
                ("state".to_owned(), "a&b\"".to_owned()),
                ("csrf".to_owned(), "c1".to_owned())
            ]
        );
        assert!(form_of("<p>none</p>", &page, "sign-in").is_err());
        assert!(form_of(html, &page, "consent").is_err());
    }

    #[test]
    fn the_link_back_is_read_from_the_consent_answer() {
        let html =
            "<a id=\"continue\" href=\"http://127.0.0.1:9/cb?code=k&amp;state=s\">Continue</a>";
        assert_eq!(
            continue_link(html).unwrap(),
            "http://127.0.0.1:9/cb?code=k&state=s"
        );
        assert!(continue_link("<p>denied</p>").is_err());
    }
}
