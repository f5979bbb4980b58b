import Foundation

// Small entry points for the other targets of this package (ModelKitServices), at `package`
// access: they are not public API. Each exists because the service layer needs a piece of a
// model's or context's state that the public API deliberately does not let apps set.

extension Model {
    /// Marks the model as matching the copy a backend now stores: its state becomes
    /// ``ModelState/loaded``, as after loading it, and its changes are reset unless
    /// `resettingChanges` is false (values changed while the save was in flight).
    ///
    /// ModelKitServices calls it after a save succeeds. Apps cannot set ``modelState``, which
    /// records what an instance was made from; a saved model has a stored copy, like a loaded one.
    package func markSaved(resettingChanges: Bool) {
        if resettingChanges { resetChanges() }
        storage.metadata.state = .loaded
    }
}

extension ModelContext {
    /// State that another target of this package keeps per context, by key: ModelKitServices
    /// keeps there the server version (ETag) of each record it saved or fetched into this context,
    /// so that an update or a delete can send it as a precondition.
    ///
    /// A plain dictionary: like the rest of the context, it belongs to the context's isolation
    /// domain, so it needs no lock.
    package subscript(packageState key: String) -> AnyObject? {
        get { packageState[key] }
        set { packageState[key] = newValue }
    }
}
