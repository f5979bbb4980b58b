import Foundation

// The seed's "Getting Properties and/or Changed Properties", with old values, revert and batches.

extension Model {
    /// All persisted properties as an object of values keyed by property name, in declaration
    /// order: the seed's `properties` dictionary.
    ///
    /// Values are in the property-list form of ``ModelValue`` (native dates and data); references
    /// are `ModelPointer` objects and arrays of references arrays of them; `nil` is
    /// ``ModelValue/null``. It is built with the model's `Codable` conformance, without reflection,
    /// like ``serialize(as:)`` builds its `properties`.
    ///
    /// ```swift
    /// let values = try author.properties
    /// values["name"]      // .string("Jon Gilkison")
    /// values["age"]       // .int(39)
    /// ```
    ///
    /// - Throws: ``SerializationError`` when a property fails to encode.
    /// - Complexity: O(n) in the size of the properties.
    public var properties: ModelValue.Object {
        get throws {
            let value: ModelValue
            do {
                value = try GraphStreamWriter.valueTree(of: storage.values)
            } catch let error as EncodingError {
                throw SerializationError(encodingError: error, modelIndex: 0, modelName: Self.modelName)
            }
            guard case .object(let object) = value else { return ModelValue.Object() }
            return object
        }
    }

    /// The persisted properties that changed since the model was created, loaded or last reset
    /// (``resetChanges()``), each with its value then and now. The seed's `modelChanges` is
    /// ``ModelChanges/newValues``.
    ///
    /// ```swift
    /// author.resetChanges()
    /// author.email = "jon@interfacelab.com"
    /// author.changes.properties          // ["email"]
    /// author.changes["email"]?.oldValue  // the email before
    /// ```
    ///
    /// A property changed and then set back to its value at the reset is not a change. References
    /// and arrays of references are properties like any other. Properties whose values fail to
    /// encode are not reported (``properties`` throws the error).
    ///
    /// - Complexity: O(n) in the size of the properties: changes are found by comparing the
    ///   encoded values now with those saved at the first change, so writes stay cheap.
    public var changes: ModelChanges {
        switch storage.box.baseline {
        case .saved:
            if let restored = storage.tracker?.restored {
                return ModelChanges.between(restored, Self.encoded(storage.values))
            }
            guard let original = storage.tracker?.original else { return ModelChanges() }
            return ModelChanges.between(Self.encoded(original), Self.encoded(storage.values))
        case .newUntouched:
            return ModelChanges()
        case .newWritten:
            guard case .object(let defaults)? = DefaultValues.of(Self.self) else { return ModelChanges() }
            return ModelChanges.between(defaults, Self.encoded(storage.values))
        }
    }

    /// Whether any persisted property differs from its value at the last reset.
    ///
    /// - Complexity: O(1) for a model never changed since its reset, else as ``changes``.
    public var hasChanges: Bool {
        switch storage.box.baseline {
        case .saved: (storage.tracker?.original != nil || storage.tracker?.restored != nil) && !changes.isEmpty
        case .newUntouched: false
        case .newWritten: !changes.isEmpty
        }
    }

    /// Forgets the changes: the current values become the ones ``changes`` compares with.
    ///
    /// - Complexity: O(1).
    public func resetChanges() {
        storage.box.baseline = .saved
        storage.tracker?.original = nil
        storage.tracker?.restored = nil
        storage.box.dropTrackerIfEmpty()
        storage.quietEpoch = 0
    }

    /// Puts back the values the persisted properties had at the last reset (for a new model never
    /// reset: the values a new instance has), and forgets the changes. This is a change like any
    /// other: observers hear about it and ``updatedAt`` moves.
    ///
    /// - Complexity: O(n) in the size of the properties.
    public func revertChanges() {
        let original: Properties
        switch storage.box.baseline {
        case .saved:
            if let restored = storage.tracker?.restored { return revertRestored(restored) }
            guard let saved = storage.tracker?.original else { return }
            original = saved
        case .newUntouched:
            return
        case .newWritten:
            original = Properties()
        }
        let pending = _willChange()
        let before = storage.values
        storage.values = original
        _didChange(pending)
        propagateReplacement(from: before)
        resetChanges()
    }

    /// Starts a batch of changes: until the matching ``endChanges()``, changes are not reported one
    /// by one. Batches nest; only the outermost `endChanges()` reports.
    ///
    /// ```swift
    /// author.beginChanges()
    /// author.email = "whutwhut@interfacelab.com"
    /// author.name = "Joe Blow"
    /// try author.endChanges()     // one .modelDidChange notification, one event per stream
    /// ```
    ///
    /// Writes inside a batch cost what writes to an unobserved model cost.
    public func beginChanges() {
        // The listening state's fields directly, not the tracker's accessors: each accessor
        // looks up the generic metadata of the tracker anew in code not specialized for the
        // model (a third of each model's end of a context batch, in a `perf record -g` of
        // live-batch).
        let listening = changeTracker.listeningState
        if listening.batchDepth == 0 { listening.batchStart = storage.values }
        listening.batchDepth += 1
        storage.quietEpoch = 0
    }

    /// Ends a batch started with ``beginChanges()``. The outermost `endChanges()` reports what the
    /// batch changed, once: a ``Foundation/NSNotification/Name/modelDidChange`` notification (when
    /// notifications are on), one ``ModelChangeEvent`` to streams and closure observers, one
    /// mutation to the Observation framework, and a new ``updatedAt``. A batch that changed
    /// nothing reports nothing.
    ///
    /// - Throws: ``ChangeTrackingError/endWithoutBegin(modelName:modelId:)`` when no batch is open;
    ///   the model is unchanged.
    public func endChanges() throws(ChangeTrackingError) {
        // The listening state's fields directly (see `beginChanges()`).
        guard let tracker = storage.tracker, let listening = tracker.listening, listening.batchDepth > 0 else {
            throw .endWithoutBegin(modelName: Self.modelName, modelId: modelId)
        }
        listening.batchDepth -= 1
        guard listening.batchDepth == 0 else { return }
        let start = listening.batchStart
        listening.batchStart = nil
        // A load inside the batch reset the model: its undo goes back to what the load gave it,
        // not past the load to the values before the batch.
        let loaded = listening.batchLoaded
        listening.batchLoaded = nil
        storage.quietEpoch = 0
        if listening.batchTouchedObservation {
            listening.batchTouchedObservation = false
            ObservationSlots.willSet(storage.box)
            ObservationSlots.didSet(storage.box)
        }
        guard let start, ChangeTracker.hasListeners(tracker, context: storage.context) else { return }
        // Only live result sets listen: they re-read the model (and, should it have ended as it
        // started, see it in place, a modification), so it isn't encoded twice to compare.
        guard ChangeTracker.readsChanges(tracker, context: storage.context) else {
            return report(ModelChanges(), batched: true, before: start)
        }
        let changes = ModelChanges.between(Self.encoded(start), Self.encoded(storage.values))
        guard !changes.isEmpty else { return }
        if let loaded {
            if !ModelChanges.between(Self.encoded(loaded), Self.encoded(storage.values)).isEmpty { registerUndo(restoring: loaded) }
        } else {
            registerUndo(restoring: start)
        }
        report(changes, batched: true, before: start)
    }

    /// Runs `body` between ``beginChanges()`` and ``endChanges()``, so that its changes are
    /// reported once, also when `body` throws.
    ///
    /// ```swift
    /// author.batchChanges {
    ///     author.name = "Joe Blow"
    ///     author.age = 29
    /// }
    /// ```
    @discardableResult
    public func batchChanges<Result>(_ body: () throws -> Result) rethrows -> Result {
        beginChanges()
        defer { try? endChanges() }
        return try body()
    }
}

extension Model {
    /// Replaces all persisted properties with values loaded from serialized data. Loading is a
    /// reset: afterwards the model has no changes. Observers hear about what the load changed, as
    /// one batch.
    func replaceLoadedValues(_ values: Properties) {
        let toldRegistrar = storage.box.observed
        if toldRegistrar {
            storage.box.observed = false
            ObservationSlots.willSet(storage.box)
        }
        let tracker = storage.tracker
        // A model in an open batch (its own, or its context's) reports the load with the rest of
        // the batch, at its end: from the values at the batch's start, where live results hold it.
        let listening = (tracker?.batchDepth ?? 0) == 0 && ChangeTracker.hasListeners(tracker, context: storage.context)
        let before = listening ? storage.values : nil
        if let tracker, tracker.batchDepth > 0 { tracker.batchLoaded = values }
        storage.values = values
        if toldRegistrar { ObservationSlots.didSet(storage.box) }
        storage.box.baseline = .saved
        tracker?.original = nil
        tracker?.restored = nil
        storage.box.dropTrackerIfEmpty()
        storage.stampPending = false
        storage.quietEpoch = 0
        storage.context?.noteIndexedWrite(self)
        if let before {
            guard ChangeTracker.readsChanges(tracker, context: storage.context) else {
                return report(ModelChanges(), batched: true, before: before)
            }
            let changes = ModelChanges.between(Self.encoded(before), Self.encoded(values))
            if !changes.isEmpty { report(changes, batched: true, before: before) }
        }
    }
}
