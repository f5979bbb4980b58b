import ModelKit

// The seed's model-level calls: `[author save:&error]`, `[author saveInBackground:^…]`. The
// async forms run in the caller's isolation domain (the model's context's); the completion-handler
// forms are for main-actor code that is not async, such as a target–action handler.

extension RemoteModel {
    /// Saves the model, and first the new or changed models it references, through `service` or
    /// else ``ModelServices/default``: the same as `service.save(self)`.
    ///
    /// ```swift
    /// author.name = "Jon"
    /// try await author.save()
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notConfigured`` when there is no service,
    ///   and what ``ModelService/save(_:isolation:)`` throws.
    /// - Complexity: O(*n*) in the models the model reaches, plus the requests.
    public func save(using service: (any ModelService)? = nil, isolation: isolated (any Actor)? = #isolation)
        async throws(ServiceError)
    {
        try await ModelServices.resolve(service).save(self)
    }

    /// Fills the model from its record, in place, and with a `referenceDepth` the models it
    /// references too, through `service` or else ``ModelServices/default``: the same as
    /// `service.fetch(self, referenceDepth: referenceDepth)`.
    ///
    /// ```swift
    /// let author = Author.instance(objectId: "001", in: context)
    /// if author.modelState == .needsData { try await author.fetch() }
    /// try await author.fetch(referenceDepth: 1)     // and the posts it references
    /// ```
    ///
    /// - Parameter referenceDepth: How many references away to fetch: 0 (the default) for the
    ///   model alone, `Int.max` for everything it reaches (see
    ///   ``ModelService/fetch(_:referenceDepth:maximumRecords:isolation:)``).
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notConfigured`` when there is no service,
    ///   and what ``ModelService/fetch(_:referenceDepth:maximumRecords:isolation:)`` throws.
    /// - Complexity: O(*p*) in the records' size, plus one request, and one per collection per
    ///   level of references per 100 records.
    public func fetch(
        referenceDepth: Int = 0, using service: (any ModelService)? = nil, isolation: isolated (any Actor)? = #isolation
    ) async throws(ServiceError) {
        try await ModelServices.resolve(service).fetch(self, referenceDepth: referenceDepth)
    }

    /// Deletes the model's record, then removes the model from its context, through `service` or
    /// else ``ModelServices/default``: the same as `service.delete(self)`.
    ///
    /// ```swift
    /// try await author.delete()
    /// ```
    ///
    /// - Throws: ``ServiceError``: ``ServiceError/Code/notConfigured`` when there is no service,
    ///   and what ``ModelService/delete(_:isolation:)`` throws.
    /// - Complexity: O(1) plus one request.
    public func delete(using service: (any ModelService)? = nil, isolation: isolated (any Actor)? = #isolation)
        async throws(ServiceError)
    {
        try await ModelServices.resolve(service).delete(self)
    }
}

extension RemoteModel {
    /// Saves the model in a task on the main actor and calls `completion` there with the outcome
    /// (the seed's `saveInBackground:`). For code that is not async; async code awaits
    /// ``save(using:isolation:)``.
    ///
    /// ```swift
    /// author.saveInBackground { result in
    ///     if case .failure(let error) = result { print("Oops: \(error)") }
    /// }
    /// ```
    ///
    /// The model must belong to a main-actor context (such as `ModelContext.current`).
    ///
    /// - Complexity: as ``save(using:isolation:)``; the call itself returns at once.
    @MainActor
    public func saveInBackground(
        using service: (any ModelService)? = nil,
        completion: @escaping @MainActor (Result<Void, ServiceError>) -> Void = { _ in }
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in try await self.save(using: service) }
    }

    /// Fetches the model, and with a `referenceDepth` the models it references, in a task on
    /// the main actor and calls `completion` there with the outcome (the seed's
    /// `fetchInBackground:`).
    ///
    /// ```swift
    /// author.fetchInBackground { _ in reloadView() }
    /// blog.fetchInBackground(referenceDepth: 2) { _ in reloadView() }
    /// ```
    ///
    /// - Complexity: as ``fetch(referenceDepth:using:isolation:)``; the call itself returns at once.
    @MainActor
    public func fetchInBackground(
        referenceDepth: Int = 0, using service: (any ModelService)? = nil,
        completion: @escaping @MainActor (Result<Void, ServiceError>) -> Void = { _ in }
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in
            try await self.fetch(referenceDepth: referenceDepth, using: service)
        }
    }

    /// Deletes the model in a task on the main actor and calls `completion` there with the
    /// outcome (the seed's `deleteInBackground:`).
    ///
    /// ```swift
    /// author.deleteInBackground { result in print(result) }
    /// ```
    ///
    /// - Complexity: as ``delete(using:isolation:)``; the call itself returns at once.
    @MainActor
    public func deleteInBackground(
        using service: (any ModelService)? = nil,
        completion: @escaping @MainActor (Result<Void, ServiceError>) -> Void = { _ in }
    ) {
        ModelServices.report(to: completion) { () throws(ServiceError) in try await self.delete(using: service) }
    }
}
