import Foundation
import Testing

@testable import ModelKit

/// A model class that is not final, and a subclass of it: the identity map finds models by their
/// dynamic class, which for these is not the type they were inserted as.
class Vehicle: ModelObject<Vehicle.Properties> {
    struct Properties: ModelProperties { var wheels = 4 }
    required init() {}
}

final class Bicycle: Vehicle {}

@Suite("Model footprint")
struct ModelFootprintTests {
    @Test("A model is one object whose properties follow 64 bytes of framework state")
    func oneObject() {
        #expect(MemoryLayout<ModelMetadata>.size == 41)
        let author = Author()
        let address = UInt(bitPattern: Unmanaged.passUnretained(author).toOpaque())
        let values = author.storage.box.withValuesPointer { UInt(bitPattern: $0) }
        // 16 bytes of object header, then the metadata, flags, counters and context.
        #expect(values - address == 16 + 64)
    }

    @Test("The packed metadata keeps every state, membership and object id it is given")
    func packedMetadata() {
        let states: [ModelState] = [.new, .needsData, .loaded]
        let memberships: [Membership] = [.unmanaged, .managed, .removed]
        for state in states {
            for membership in memberships {
                for objectId in [nil, "", "abc", String(repeating: "k", count: 40)] {
                    var metadata = ModelMetadata(
                        modelId: .generate(), objectId: objectId, createdAt: Date(), updatedAt: Date(), state: state,
                        membership: membership)
                    #expect(metadata.state == state && metadata.membership == membership && metadata.objectId == objectId)
                    // Changing one part leaves the others as they were.
                    for other in states {
                        metadata.state = other
                        #expect(metadata.state == other && metadata.membership == membership)
                    }
                    for other in memberships {
                        metadata.membership = other
                        #expect(metadata.membership == other && metadata.state == states.last)
                    }
                    let copy = metadata
                    metadata.objectId = "changed"
                    #expect(copy.objectId == objectId && metadata.objectId == "changed")
                }
            }
        }
    }

    @Test("A new model's writes need no change tracker; after a reset the first write makes one and the next reset gives it back")
    func trackerComesAndGoes() {
        let context = ModelContext()
        let author = Author.instance(in: context)
        #expect(author.storage.tracker == nil)
        author.name = "Jon"
        #expect(author.storage.tracker == nil)
        #expect(author.changes["name"] == PropertyChange(property: "name", oldValue: "", newValue: "Jon"))
        author.resetChanges()
        #expect(author.storage.tracker == nil)
        #expect(author.changes.isEmpty)
        author.name = "Joe"
        #expect(author.storage.tracker != nil)
        #expect(author.changes["name"] == PropertyChange(property: "name", oldValue: "Jon", newValue: "Joe"))
        author.revertChanges()
        #expect(author.storage.tracker == nil)
        #expect(author.name == "Jon")
    }

    @Test("A new model's changes are what differs from a new instance, until its first reset")
    func newModelsCompareWithDefaults() {
        let context = ModelContext()
        let author = Author.instance(in: context)
        #expect(!author.hasChanges)
        author.name = "Jon"
        author.age = 39
        #expect(author.hasChanges)
        #expect(Set(author.changes.properties) == ["name", "age"])
        author.age = 0
        #expect(author.changes.properties == ["name"])
        author.name = ""
        #expect(!author.hasChanges)
        #expect(author.changes.isEmpty)
        author.name = "Joe"
        author.revertChanges()
        #expect(author.name == "")
        #expect(!author.hasChanges)
        author.name = "Ann"
        #expect(author.storage.tracker != nil)
        #expect(author.changes["name"] == PropertyChange(property: "name", oldValue: "", newValue: "Ann"))
    }

    @Test("A loaded model compares with its loaded values, not with a new instance's")
    func loadedModelsCompareWithLoadedValues() throws {
        let source = ModelContext()
        let written = Author.instance(in: source)
        written.name = "Jon"
        let data = try source.data()
        let context = ModelContext()
        try context.load(data)
        let author = try #require(context.model(Author.self, modelId: written.modelId))
        #expect(!author.hasChanges)
        author.age = 40
        #expect(author.storage.tracker != nil)
        #expect(author.changes.properties == ["age"])
        author.revertChanges()
        #expect(author.name == "Jon")
        #expect(author.age == 0)
    }

    @Test("A tracker that still has observers or a batch stays after a reset, and goes with the last of them")
    func trackerStaysWhileListened() throws {
        let context = ModelContext()
        let author = Author.instance(in: context)
        var heard = 0
        let token = author.observeChanges { _, _ in heard += 1 }
        author.name = "Jon"
        author.resetChanges()
        #expect(author.storage.tracker != nil)
        author.beginChanges()
        token.cancel()
        author.resetChanges()
        #expect(author.storage.tracker != nil)
        try author.endChanges()
        author.resetChanges()
        #expect(author.storage.tracker == nil)
        #expect(heard == 1)
    }

    @Test(
        "endChanges with no batch open throws, makes no listening state on a model's tracker, and leaves the tracker to go at a reset"
    )
    func unbalancedEndMakesNoState() {
        let context = ModelContext()
        let author = Author.instance(in: context)
        author.resetChanges()
        author.name = "Jon"
        #expect(author.storage.tracker != nil)
        #expect(throws: ChangeTrackingError.self) { try author.endChanges() }
        #expect(author.storage.tracker?.listening == nil)
        author.resetChanges()
        #expect(author.storage.tracker == nil)
    }

    @Test("A model outside any context keeps the models it was given, and drops its tracker when its context adopts them")
    func heldModelsLiveInTheTracker() {
        let post = Post()
        post.author = Author()
        #expect(post.storage.box.held.count == 1)
        #expect(post.author != nil)
        let context = ModelContext()
        context.insert(post)
        post.resetChanges()
        #expect(post.storage.box.held.isEmpty)
        #expect(post.storage.tracker == nil)
        #expect(post.author?.modelContext === context)
    }

    @Test("A model outside any context holds every model appended to it, and its context adopts them all")
    func manyHeldModels() {
        let author = Author()
        let posts = (0..<2_000).map { _ in Post() }
        for post in posts { author.posts.append(post) }
        #expect(author.storage.box.held.count == posts.count)
        #expect(author.posts.count == posts.count)
        let context = ModelContext()
        context.insert(author)
        author.resetChanges()
        #expect(author.storage.box.held.isEmpty)
        #expect(author.storage.tracker == nil)
        #expect(context.models(of: Post.self).count == posts.count)
        #expect(author.posts.map(\.modelId) == posts.map(\.modelId))
    }

    @Test("A context finds a model of a subclass by id, as the subclass, the base class or any model")
    func subclassesInTheIdentityMap() {
        let context = ModelContext()
        let vehicle = Vehicle.instance(in: context)
        let bicycle = Bicycle()
        context.insert(bicycle as Vehicle)
        #expect(context.model(Bicycle.self, modelId: bicycle.modelId) === bicycle)
        #expect(context.model(Vehicle.self, modelId: bicycle.modelId) === bicycle)
        #expect(context.model(withId: bicycle.modelId) as? Bicycle === bicycle)
        #expect(context.model(Vehicle.self, modelId: vehicle.modelId) === vehicle)
        #expect(context.model(Bicycle.self, modelId: vehicle.modelId) == nil)
        #expect(context.model(Author.self, modelId: vehicle.modelId) == nil)
        #expect(context.allModels.count == 2)
    }

    @Test("The estimated size counts a change tracker only while the model has one")
    func estimatedSizeFollowsTheTracker() {
        let context = ModelContext()
        let author = Author.instance(in: context)
        let unchanged = context.estimatedByteSize
        author.name = "Jon"
        #expect(context.estimatedByteSize == unchanged)  // a new model needs no tracker
        author.resetChanges()
        author.name = "Joe"
        let changed = context.estimatedByteSize
        #expect(changed > unchanged)
        author.resetChanges()
        #expect(context.estimatedByteSize == unchanged)
    }
}
