//! Request dispatch: from method + path + query + body to a service call.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::{header, Method};
use kubesim_core::patch::{PatchBody, PatchType};
use kubesim_core::table::{self, TableOptions};
use kubesim_core::{schema, ApiError, ResourceInfo};
use serde_json::{json, Value};

use super::body;
use super::metrics::Labels;
use super::negotiate::{self, Format};
use super::query::Query;
use super::request_info::RequestInfo;
use super::route::{self, ResourcePath, Route};
use super::{
    bytes_response, error_response, json_response, value_response, with_warnings, App, MAX_BODY,
};
use crate::auth::{Attributes, RequestAuth};
use crate::service::approval::ApprovalChange;
use crate::service::read::list_json;
use crate::service::subresource::ScaleChange;
use crate::service::{Caller, WatchRequest};

pub(crate) async fn dispatch(app: Arc<App>, req: Request) -> Response {
    let auth = match authenticate_and_authorize(&app, &req) {
        Ok(a) => a,
        Err(e) => return error_response(&e),
    };
    crate::auth::scoped(auth, serve(app, req)).await
}

/// Who sent `req` (after impersonation), once RBAC allows what it asks.
fn authenticate_and_authorize(app: &App, req: &Request) -> Result<RequestAuth, ApiError> {
    let server = &app.server;
    let user = super::identity::user_of(app, req)?;
    let enforce = server.rbac_enabled();
    if enforce {
        let a = request_attributes(req);
        let d = server.authorize(&user, &a);
        if !d.allowed {
            return Err(a.forbidden_because(&user.name, &d.reason));
        }
    }
    Ok(RequestAuth { user, enforce })
}

/// What `req` asks to do, in RBAC's terms.
fn request_attributes(req: &Request) -> Attributes {
    // Classified once per request: by the guard in front of the limits
    // when it ran, else here.
    let info = match req.extensions().get::<RequestInfo>() {
        Some(i) => i.clone(),
        None => RequestInfo::of(req.method(), req.uri().path(), req.uri().query()),
    };
    let Some(r) = info.resource else {
        return Attributes::non_resource(req.method().as_str(), &info.path);
    };
    // A list or watch of one object by `metadata.name` names it, as
    // upstream's request info does.
    let field_selector = if matches!(info.verb.as_str(), "list" | "watch") {
        Query::parse(req.uri().query())
            .get("fieldSelector")
            .map(|s| s.to_string())
            .unwrap_or_default()
    } else {
        String::new()
    };
    let name = if r.name.is_empty() {
        field_selector
            .split(',')
            .find_map(|req| {
                let (k, v) = req.split_once("==").or_else(|| req.split_once('='))?;
                (k.trim() == "metadata.name").then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    } else {
        r.name
    };
    Attributes {
        verb: info.verb,
        resource_request: true,
        group: r.group,
        version: r.version,
        resource: r.resource,
        subresource: r.subresource,
        namespace: r.namespace,
        name,
        path: String::new(),
        field_selector,
    }
}

async fn serve(app: Arc<App>, req: Request) -> Response {
    let started = app.server.clock.instant();
    let path = req.uri().path().to_string();
    let route = route::parse(&path);
    match route {
        Route::Resource(p) => {
            let mut labels = Labels {
                verb: "GET",
                dry_run: false,
                group: p.group.clone(),
                version: p.version.clone(),
                resource: p.plural.clone(),
                subresource: p.subresource.clone().unwrap_or_default(),
                scope: if p.name.is_some() {
                    "resource"
                } else if p.namespace.is_empty() {
                    "cluster"
                } else {
                    "namespace"
                },
            };
            let resp = match resource(&app, req, &p, &mut labels).await {
                Ok(r) => r,
                Err(e) => error_response(&e),
            };
            let secs = started.elapsed().as_secs_f64();
            app.metrics.observe(labels, resp.status().as_u16(), secs);
            resp
        }
        other => match non_resource(&app, &req, other) {
            Ok(r) => r,
            Err(e) => error_response(&e),
        },
    }
}

fn non_resource(app: &App, req: &Request, route: Route) -> Result<Response, ApiError> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let reg = &app.server.registry;
    match route {
        Route::Version => Ok(value_response(200, &version())),
        Route::Health(_) => Ok(bytes_response(
            200,
            "text/plain; charset=utf-8",
            b"ok".to_vec(),
        )),
        Route::Metrics => {
            let mut text = app.metrics.render(&app.server.store.usage());
            if let Some(extra) = &app.extra {
                extra.metrics(&mut text);
            }
            Ok(bytes_response(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                text.into_bytes(),
            ))
        }
        Route::ApiVersions => {
            if negotiate::wants_aggregated(accept) {
                let v = super::discovery::aggregated_core(reg);
                Ok(
                    json_response(200, serde_json::to_vec(&v).unwrap_or_default())
                        .with_content_type(negotiate::AGGREGATED_V2),
                )
            } else {
                Ok(value_response(
                    200,
                    &super::discovery::api_versions(&app.address),
                ))
            }
        }
        Route::ApiGroups => {
            if negotiate::wants_aggregated(accept) {
                let v = super::discovery::aggregated_groups(reg);
                Ok(
                    json_response(200, serde_json::to_vec(&v).unwrap_or_default())
                        .with_content_type(negotiate::AGGREGATED_V2),
                )
            } else {
                Ok(value_response(200, &super::discovery::api_groups(reg)))
            }
        }
        Route::Group(g) => super::discovery::api_group(reg, &g)
            .map(|v| value_response(200, &v))
            .ok_or_else(ApiError::path_not_found),
        Route::GroupVersion { group, version } => {
            super::discovery::resource_list(reg, &group, &version)
                .map(|v| value_response(200, &v))
                .ok_or_else(ApiError::path_not_found)
        }
        Route::OpenApiIndex => Ok(value_response(200, &schema::openapi_index(reg))),
        Route::OpenApiDoc(p) => match schema::gv_document(reg, &p) {
            Some(doc) => Ok(json_response(200, doc.json.to_vec())),
            None => Err(ApiError::path_not_found()),
        },
        Route::NotFound => match app.extra.as_ref().and_then(|x| x.get(req.uri().path())) {
            Some((content_type, body)) => Ok(bytes_response(200, &content_type, body)),
            None => Err(ApiError::path_not_found()),
        },
        Route::OpenApiV2 | Route::Resource(_) => Err(ApiError::path_not_found()),
    }
}

trait WithContentType {
    fn with_content_type(self, ct: &str) -> Self;
}

impl WithContentType for Response {
    fn with_content_type(mut self, ct: &str) -> Self {
        if let Ok(v) = http::HeaderValue::from_str(ct) {
            self.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        self
    }
}

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "36",
        "gitVersion": "v1.36.0-kubesim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// Reads the body, refusing oversized ones with 413.
async fn body_bytes(req: Request) -> Result<bytes::Bytes, ApiError> {
    axum::body::to_bytes(req.into_body(), MAX_BODY)
        .await
        .map_err(|_| {
            ApiError::too_large("the request body is too large: the limit is 3145728 bytes")
        })
}

async fn resource(
    app: &Arc<App>,
    req: Request,
    p: &ResourcePath,
    labels: &mut Labels,
) -> Result<Response, ApiError> {
    let server = &app.server;
    let r = server.resource(&p.group, &p.version, &p.plural)?;
    if (!r.namespaced() && !p.namespace.is_empty())
        || (r.namespaced() && p.namespace.is_empty() && p.name.is_some())
    {
        return Err(ApiError::path_not_found());
    }
    if let Some(s) = &p.subresource {
        if !r.has_subresource(s) {
            return Err(ApiError::path_not_found());
        }
    }
    let q = Query::parse(req.uri().query());
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let caller = Caller {
        user_agent: req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
    };
    let ns = p.namespace.as_str();
    let sub = p.subresource.as_deref();
    let method = req.method().clone();
    match (method, p.name.as_deref()) {
        (Method::GET, None) => {
            let opts = q.list()?;
            if q.watch()? {
                labels.verb = "WATCH";
                let format = negotiate::format(accept.as_deref())?;
                let rx = server.watch(WatchRequest {
                    resource: r.clone(),
                    namespace: ns.to_string(),
                    opts,
                    // Clients are sent the bytes.
                    values: None,
                })?;
                return Ok(super::watch::stream(app.clone(), r, rx, format));
            }
            labels.verb = "LIST";
            let format = negotiate::format(accept.as_deref())?;
            let page = server.list(&r, ns, &opts)?;
            match format {
                Format::Json => Ok(json_response(200, list_json(&r, &page))),
                Format::Metadata { v1beta1 } => {
                    let items: Vec<Value> = page
                        .items
                        .iter()
                        .filter_map(|rec| serde_json::from_slice::<Value>(&rec.bytes).ok())
                        .map(|o| Format::partial(v1beta1, &o))
                        .collect();
                    let mut meta = json!({"resourceVersion": page.rev.to_string()});
                    if let Some(c) = &page.continue_token {
                        meta["continue"] = json!(c);
                    }
                    Ok(value_response(
                        200,
                        &Format::partial_list(v1beta1, meta, items),
                    ))
                }
                Format::Table { v1beta1 } => {
                    let objs: Vec<Value> = page
                        .items
                        .iter()
                        .filter_map(|rec| serde_json::from_slice(&rec.bytes).ok())
                        .collect();
                    let mut t = table::table(&r, &objs, &table_opts(app, &q, true)?);
                    t["metadata"] = json!({"resourceVersion": page.rev.to_string()});
                    if let Some(c) = &page.continue_token {
                        t["metadata"]["continue"] = json!(c);
                    }
                    if v1beta1 {
                        t["apiVersion"] = json!("meta.k8s.io/v1beta1");
                    }
                    Ok(value_response(200, &t))
                }
            }
        }
        (Method::GET, Some(name)) => {
            labels.verb = "GET";
            match sub {
                Some("scale") => Ok(value_response(200, &server.get_scale(&r, ns, name)?)),
                Some("log") => {
                    let text = server.pod_log(ns, name, &q.log()?)?;
                    Ok(bytes_response(200, "text/plain", text.into_bytes()))
                }
                Some("exec") | Some("attach") | Some("portforward") => {
                    Err(unsupported_stream(sub.unwrap_or("")))
                }
                // Create-only: tokens are issued, never read back.
                Some("token") => Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                )),
                _ => {
                    let format = negotiate::format(accept.as_deref())?;
                    let obj = server.get(&r, ns, name)?;
                    render_one(app, &r, &q, format, 200, obj, &[])
                }
            }
        }
        (Method::POST, None) => {
            labels.verb = "POST";
            let opts = q.write()?;
            labels.dry_run = opts.dry_run;
            let raw = body_bytes(req).await?;
            let body = body::decode(&content_type, &raw)?;
            if r.group.is_empty() && r.plural == "bindings" {
                let name = kubesim_core::meta::name(&body).to_string();
                return Ok(value_response(201, &server.bind(ns, &name, &body).await?));
            }
            let mut warnings = body::duplicates(&content_type, &raw, opts.field_validation)?;
            let format = negotiate::format(accept.as_deref())?;
            let res = server.create(&r, ns, body, &opts, &caller).await?;
            warnings.extend(res.warnings);
            render_one(app, &r, &q, format, 201, res.obj, &warnings)
        }
        (Method::POST, Some(name)) => {
            labels.verb = "POST";
            match sub {
                Some("binding") => {
                    let body = body::decode(&content_type, &body_bytes(req).await?)?;
                    Ok(value_response(201, &server.bind(ns, name, &body).await?))
                }
                Some("eviction") => {
                    let body = body::decode(&content_type, &body_bytes(req).await?)?;
                    Ok(value_response(201, &server.evict(ns, name, &body).await?))
                }
                Some("token") => {
                    let body = body::decode(&content_type, &body_bytes(req).await?)?;
                    Ok(value_response(201, &server.create_token(ns, name, &body)?))
                }
                Some("exec") | Some("attach") | Some("portforward") => {
                    Err(unsupported_stream(sub.unwrap_or("")))
                }
                _ => Err(ApiError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource ({})",
                    r.plural
                ))),
            }
        }
        (Method::PUT, Some(name)) => {
            labels.verb = "PUT";
            let opts = q.write()?;
            labels.dry_run = opts.dry_run;
            let raw = body_bytes(req).await?;
            let body = body::decode(&content_type, &raw)?;
            let mut warnings = body::duplicates(&content_type, &raw, opts.field_validation)?;
            match sub {
                Some("scale") => {
                    let s = server
                        .write_scale(&r, ns, name, ScaleChange::Replace(&body), &opts, &caller)
                        .await?;
                    Ok(value_response(200, &s))
                }
                Some("finalize") => Ok(value_response(
                    200,
                    &server.finalize_namespace(name, &body, &caller).await?,
                )),
                Some("approval") => {
                    let format = negotiate::format(accept.as_deref())?;
                    let res = server
                        .write_approval(&r, name, ApprovalChange::Replace(body), &opts, &caller)
                        .await?;
                    render_one(app, &r, &q, format, 200, res.obj, &res.warnings)
                }
                _ => {
                    let format = negotiate::format(accept.as_deref())?;
                    let res = server
                        .update(&r, ns, name, body, sub, &opts, &caller)
                        .await?;
                    warnings.extend(res.warnings);
                    render_one(app, &r, &q, format, 200, res.obj, &warnings)
                }
            }
        }
        (Method::PATCH, Some(name)) => {
            labels.verb = "PATCH";
            let kind = PatchType::from_content_type(&content_type)
                .ok_or_else(|| ApiError::unsupported_media_type(&content_type))?;
            if kind == PatchType::Apply {
                labels.verb = "APPLY";
            }
            let opts = q.write()?;
            labels.dry_run = opts.dry_run;
            let body = body_bytes(req).await?;
            if sub == Some("scale") {
                let s = server
                    .write_scale(
                        &r,
                        ns,
                        name,
                        ScaleChange::Patch(kind, &body),
                        &opts,
                        &caller,
                    )
                    .await?;
                return Ok(value_response(200, &s));
            }
            let format = negotiate::format(accept.as_deref())?;
            if sub == Some("approval") {
                let res = server
                    .write_approval(&r, name, ApprovalChange::Patch(kind, &body), &opts, &caller)
                    .await?;
                return render_one(app, &r, &q, format, 200, res.obj, &res.warnings);
            }
            let res = server
                .patch(
                    &r,
                    ns,
                    name,
                    kind,
                    PatchBody::Bytes(&body),
                    sub,
                    &opts,
                    &caller,
                )
                .await?;
            render_one(
                app,
                &r,
                &q,
                format,
                if res.created { 201 } else { 200 },
                res.obj,
                &res.warnings,
            )
        }
        (Method::DELETE, Some(name)) => {
            labels.verb = "DELETE";
            let body = body::delete_options(&content_type, &body_bytes(req).await?)?;
            let opts = q.delete(body.as_ref())?;
            labels.dry_run = opts.dry_run;
            let res = server.delete(&r, ns, name, &opts).await?;
            Ok(value_response(res.code, &res.body))
        }
        (Method::DELETE, None) => {
            labels.verb = "DELETECOLLECTION";
            let body = body::delete_options(&content_type, &body_bytes(req).await?)?;
            let opts = q.delete(body.as_ref())?;
            let list = q.list()?;
            Ok(value_response(
                200,
                &server.delete_collection(&r, ns, &list, &opts).await?,
            ))
        }
        _ => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({})",
            r.plural
        ))),
    }
}

fn unsupported_stream(what: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{what} is not supported: pods on this cluster are emulated and run no processes"
    ))
}

fn table_opts(app: &App, q: &Query, headers: bool) -> Result<TableOptions, ApiError> {
    Ok(TableOptions {
        include: negotiate::include_object(q.get("includeObject"))?,
        now: app.server.clock.now(),
        headers,
    })
}

/// A single object, as JSON or as a one-row Table.
fn render_one(
    app: &App,
    r: &Arc<ResourceInfo>,
    q: &Query,
    format: Format,
    code: u16,
    obj: Value,
    warnings: &[String],
) -> Result<Response, ApiError> {
    let resp = match format {
        Format::Json => value_response(code, &obj),
        Format::Metadata { v1beta1 } => value_response(code, &Format::partial(v1beta1, &obj)),
        Format::Table { v1beta1 } => {
            let rv = kubesim_core::meta::resource_version(&obj).to_string();
            let mut t = table::table(r, std::slice::from_ref(&obj), &table_opts(app, q, true)?);
            t["metadata"] = json!({"resourceVersion": rv});
            if v1beta1 {
                t["apiVersion"] = json!("meta.k8s.io/v1beta1");
            }
            value_response(code, &t)
        }
    };
    Ok(with_warnings(resp, warnings))
}
