use serde_json::{json, Value};

use super::{apply_defaults, prune, validate};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "x-kubernetes-validations": [
                    {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                    {"rule": "self.size == oldSelf.size || self.mutable", "messageExpression": "'size is fixed at ' + string(oldSelf.size)"}
                ],
                "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "min": {"type": "integer", "default": 0},
                    "max": {"type": "integer", "default": 5},
                    "mutable": {"type": "boolean", "default": false},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "ip": {"type": "string", "format": "ipv4"},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "x-kubernetes-list-type": "set"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object"}}}
                }
            }
        }
    })
}

fn causes(obj: Value, old: Option<Value>) -> Vec<(String, String)> {
    let s = schema();
    let mut obj = obj;
    apply_defaults(&s, &mut obj);
    validate(&s, &obj, old.as_ref())
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect()
}

fn cr(spec: Value) -> Value {
    json!({"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec})
}

#[test]
fn a_valid_object_passes() {
    assert_eq!(
        causes(
            cr(
                json!({"size": 3, "mode": "fast", "name": "ab", "ip": "10.0.0.1",
                          "port": "http", "note": null, "tags": ["a", "b"],
                          "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 1}],
                          "extra": {"anything": [1]},
                          "template": {"apiVersion": "v1", "kind": "Pod", "spec": {}}})
            ),
            None
        ),
        vec![]
    );
}

/// The cause upstream adds when a type error kept the schema's rules from
/// running.
fn rules_not_run() -> (String, String) {
    (
        "<nil>".to_string(),
        "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_string(),
    )
}

#[test]
fn type_errors_read_as_upstream() {
    assert_eq!(
        causes(cr(json!({"size": "three"})), None),
        vec![
            (
                "spec.size".to_string(),
                "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
                    .to_string()
            ),
            rules_not_run()
        ]
    );
    assert_eq!(
        causes(cr(json!({"size": 1, "port": 1.5})), None),
        vec![(
            "spec.port".to_string(),
            "Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"".to_string()
        ), rules_not_run()]
    );
    assert_eq!(
        causes(cr(json!({"size": 1, "mode": null})), None),
        vec![
            (
                "spec.mode".to_string(),
                "Invalid value: \"null\": spec.mode in body must be of type string: \"null\""
                    .to_string()
            ),
            rules_not_run()
        ]
    );
}

#[test]
fn bounds_enums_lengths_patterns_formats() {
    let got = causes(
        cr(
            json!({"size": 11, "mode": "medium", "name": "ABCDEFG", "ip": "300.1.1.1",
                  "tags": ["a", "a", "b"], "ports": [{"name": "a"}, {"name": "a"}]}),
        ),
        None,
    );
    let want = vec![
        (
            "spec.size",
            "Invalid value: 11: spec.size in body should be less than or equal to 10",
        ),
        (
            "spec.mode",
            "Unsupported value: \"medium\": supported values: \"fast\", \"slow\"",
        ),
        ("spec.name", "Too long: may not be more than 5 bytes"),
        (
            "spec.name",
            "Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            "spec.ip",
            "Invalid value: \"300.1.1.1\": spec.ip in body must be of type ipv4: \"300.1.1.1\"",
        ),
        ("spec.tags", "Too many: 3: must have at most 2 items"),
        ("spec.tags[1]", "Duplicate value: \"a\""),
        (
            "spec.ports[1]",
            "Duplicate value: map[string]interface {}{\"name\":\"a\"}",
        ),
    ];
    let want: Vec<(String, String)> = want
        .into_iter()
        .map(|(a, b)| (a.into(), b.into()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn required_and_embedded() {
    assert_eq!(
        causes(cr(json!({"template": {"spec": {}}})), None),
        vec![
            ("spec.size".to_string(), "Required value".to_string()),
            (
                "spec.template.apiVersion".to_string(),
                "Required value".to_string()
            ),
            (
                "spec.template.kind".to_string(),
                "Required value".to_string()
            ),
        ]
    );
}

#[test]
fn cel_rules_with_messages_and_transitions() {
    assert_eq!(
        causes(cr(json!({"size": 1, "min": 4, "max": 2})), None),
        vec![(
            "spec".to_string(),
            "Invalid value: \"object\": min must not exceed max".to_string()
        )]
    );
    // Transition rules run on updates only.
    let old = cr(json!({"size": 2, "min": 0, "max": 5, "mutable": false}));
    assert_eq!(
        causes(cr(json!({"size": 3})), Some(old.clone())),
        vec![(
            "spec".to_string(),
            "Invalid value: \"object\": size is fixed at 2".to_string()
        )]
    );
    assert_eq!(causes(cr(json!({"size": 2})), Some(old)), vec![]);
    assert_eq!(causes(cr(json!({"size": 3})), None), vec![]);
}

#[test]
fn defaults_fill_and_pruning_drops_unknowns() {
    let s = schema();
    let mut obj = cr(json!({"size": 1, "bogus": 1, "extra": {"kept": true},
                            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}, "junk": 1}}));
    obj["status"] = json!({"x": 1});
    prune(&s, &mut obj);
    apply_defaults(&s, &mut obj);
    assert_eq!(
        obj,
        json!({"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": "w"},
               "spec": {"size": 1, "extra": {"kept": true},
                        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}},
                        "min": 0, "max": 5, "mutable": false}})
    );
}
