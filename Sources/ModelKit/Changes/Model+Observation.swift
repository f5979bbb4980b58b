import Observation

// Swift-native observation of one model: closure observers and an AsyncSequence of changes.
// (The Observation framework itself is wired into the property accessors: see
// Core/Model+Properties.swift and ChangeTracker.swift.)

extension Model {
    /// Calls `body` after every change of this model's persisted properties, with the model and
    /// the changes (old and new values), until the returned token is cancelled or released.
    ///
    /// ```swift
    /// let token = author.observeChanges { author, changes in
    ///     for change in changes { print(change.property, change.oldValue, "→", change.newValue) }
    /// }
    /// ```
    ///
    /// `body` runs synchronously on the thread that made the change, after it, with no lock held:
    /// it may read and even write the model. A write that assigns a property its current value
    /// calls nothing. Inside ``beginChanges()``/``endChanges()``, `body` is called once, at the end,
    /// with everything the batch changed.
    ///
    /// - Returns: The token that keeps the observer registered. Keep it.
    public func observeChanges(_ body: @escaping (Self, ModelChanges) -> Void) -> ObservationToken {
        let list = observerList
        let id = list.add { event, model, _ in
            guard event.kind == .updated, let model else { return }
            body(unsafeDowncast(model, to: Self.self), event.changes)
        }.id
        return ObservationToken(list: list, id: id)
    }

    /// The changes of this model, as they happen, as an asynchronous sequence of
    /// ``ModelChangeEvent`` (kind ``ModelChangeEvent/Kind/updated``).
    ///
    /// ```swift
    /// for await event in author.changeEvents() {
    ///     print(event.changes.properties)
    /// }
    /// ```
    ///
    /// A batch (``beginChanges()``/``endChanges()``) yields one event. Events are buffered until
    /// read (`bufferingPolicy`, unbounded by default). The stream is registered when this method
    /// is called and ends its registration when iteration stops or the stream is released.
    public func changeEvents(
        bufferingPolicy: AsyncStream<ModelChangeEvent>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<ModelChangeEvent> {
        let list = observerList
        let (stream, continuation) = AsyncStream.makeStream(of: ModelChangeEvent.self, bufferingPolicy: bufferingPolicy)
        let id = list.add { event, _, _ in continuation.yield(event) }.id
        continuation.onTermination = { _ in list.remove(id) }
        return stream
    }

    /// The observer list of this model, made on first use.
    private var observerList: ObserverList {
        let tracker = changeTracker
        storage.quietEpoch = 0
        if let list = tracker.observers { return list }
        let list = ObserverList()
        tracker.observers = list
        return list
    }
}
