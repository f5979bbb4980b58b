/// Where a model's data stands.
///
/// | State | Meaning |
/// |---|---|
/// | ``new`` | Created by the app (for example with `Author.instance()`); never loaded. |
/// | ``needsData`` | A placeholder: the instance has an id (from `instance(objectId:)`, `instance(modelId:)` or a pointer whose target was not in the data), but its properties have not been loaded. |
/// | ``loaded`` | Its properties were read from serialized data. |
///
/// Setting properties does not change the state: it records what the instance was made from.
public enum ModelState: String, Sendable, Hashable, Codable {
    /// Created by the app, never loaded.
    case new
    /// A placeholder whose properties have not been loaded yet.
    case needsData
    /// Its properties were loaded from serialized data.
    case loaded
}
