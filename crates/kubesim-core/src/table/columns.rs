//! Column definitions (`meta.k8s.io/v1` TableColumnDefinition) and the
//! descriptions shared between kinds.

use serde_json::{json, Value};

/// One column of a Table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean, date.
    pub type_: String,
    /// OpenAPI format; `name` marks the column holding the object name.
    pub format: String,
    pub description: String,
    /// 0 for the default view; 1 and above only with `kubectl -o wide`.
    pub priority: i64,
}

impl Column {
    pub fn new(name: &str, type_: &str, description: &str) -> Self {
        Column {
            name: name.into(),
            type_: type_.into(),
            format: String::new(),
            description: description.into(),
            priority: 0,
        }
    }

    /// Marks the column as shown only by `-o wide`.
    pub fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }

    pub fn format(mut self, format: &str) -> Self {
        self.format = format.into();
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.type_,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

pub const NAME_DESC: &str = "Name must be unique within a namespace. Is required when creating resources. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub const CREATED_DESC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is represented in RFC3339 form and is in UTC. Populated by the system. Read-only.";
pub const CONTAINERS_DESC: &str = "Names of each container in the template.";
pub const IMAGES_DESC: &str = "Images referenced by each container in the template.";

/// The first column of almost every table.
pub fn name() -> Column {
    Column::new("Name", "string", NAME_DESC).format("name")
}

/// "Age": a relative time rendered by the server, hence type string.
pub fn age() -> Column {
    Column::new("Age", "string", CREATED_DESC)
}

pub fn string(name: &str, description: &str) -> Column {
    Column::new(name, "string", description)
}

pub fn integer(name: &str, description: &str) -> Column {
    Column::new(name, "integer", description)
}

pub fn boolean(name: &str, description: &str) -> Column {
    Column::new(name, "boolean", description)
}

/// The wide trio of workload controllers.
pub fn containers_images_selector(selector_desc: &str) -> Vec<Column> {
    vec![
        string("Containers", CONTAINERS_DESC).wide(),
        string("Images", IMAGES_DESC).wide(),
        string("Selector", selector_desc).wide(),
    ]
}
