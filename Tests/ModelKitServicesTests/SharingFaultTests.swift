import Foundation
import ModelKit
import Testing

@testable import ModelKitServices

// Sharing calls whose answer is lost after the server did them (Scripts/fault-proxy's
// "drop_after"): the retry finds its own change and takes it as done, as saves do.
extension FaultTests {
    @Test("A change of permissions or of a group whose answer was lost is retried, and taken as done")
    func lostSharingAnswers() async throws {
        let rig = try await Self.rig()
        defer { rig.proxy.stop() }
        let context = ModelContext()
        let writer = Writer.instance(in: context)
        writer.name = "Shared"
        try await rig.service.save(writer)

        // The retried PATCH with If-Match finds the version its first attempt made.
        try await rig.proxy.inject([["match": "PATCH /v1/buckets", "action": "drop_after"]])
        try await rig.service.setPermissions(Permissions(read: [.authenticated]), of: writer)
        #expect(try await rig.proxy.count("PATCH /v1/buckets") == 2)
        #expect(try await rig.direct.permissions(of: writer).read == [.authenticated])
        // The context has the server's version: the next save is an ordinary update.
        writer.age = 7
        try await rig.service.save(writer)
        #expect(!writer.hasChanges)

        // A group created, changed and deleted with each answer lost once.
        try await rig.proxy.inject([["match": "PUT /v1/buckets", "action": "drop_after"]])
        try await rig.service.createGroup("lost", members: [.user("ann")])
        try await rig.proxy.inject([["match": "PUT /v1/buckets", "action": "drop_after"]])
        try await rig.service.addMembers([.user("ben")], toGroup: "lost")
        #expect(try await rig.direct.members(ofGroup: "lost") == [.user("ann"), .user("ben")])
        try await rig.proxy.inject([["match": "DELETE /v1/buckets", "action": "drop_after"]])
        try await rig.service.deleteGroup("lost")
        #expect(try await rig.proxy.count("DELETE /v1/buckets") == 2)
        let gone = await #expect(throws: ServiceError.self) { _ = try await rig.direct.members(ofGroup: "lost") }
        #expect(gone?.code == .notFound)
        try await rig.service.deleteGroup("lost")  // not there: nothing to do

        // Someone else's change in between is still a conflict after a retry.
        let elsewhere = ModelContext()
        let theirs = Writer.instance(objectId: try #require(writer.objectId), in: elsewhere)
        try await rig.direct.fetch(theirs)
        theirs.name = "Changed elsewhere"
        try await rig.direct.save(theirs)
        try await rig.proxy.inject([["match": "PATCH /v1/buckets", "action": "status", "status": 503]])
        let error = await #expect(throws: ServiceError.self) {
            try await rig.service.setPermissions(Permissions(read: [.everyone]), of: writer)
        }
        #expect(error?.code == .conflict)
        #expect(try await rig.direct.permissions(of: writer).read == [.authenticated])
    }

    @Test("A membership change that finds the group changed by another client in between applies itself on top: both are kept")
    func membershipChangedInBetween() async throws {
        let rig = try await Self.rig()
        defer { rig.proxy.stop() }
        try await rig.direct.createGroup("crowd", members: [.user("ann")])
        // Ben's addition reads the group, then its write waits at the proxy.
        try await rig.proxy.inject([["match": "PUT /v1/buckets", "action": "hold", "name": "ben"]])
        let service = rig.service
        let addition = Task { try await service.addMembers([.user("ben")], toGroup: "crowd") }
        try await waitUntil("Ben's write to reach the proxy") { try await rig.proxy.count("PUT /v1/buckets") == 1 }
        // Meanwhile another client adds Cat and removes Ann.
        try await rig.direct.addMembers([.user("cat")], toGroup: "crowd")
        try await rig.direct.removeMembers([.user("ann")], fromGroup: "crowd")
        try await rig.proxy.release("ben")
        try await addition.value
        #expect(try await rig.direct.members(ofGroup: "crowd") == [.user("ben"), .user("cat")])
        // Refused once on its precondition, then written on top of the other client's changes.
        #expect(try await rig.proxy.count("PUT /v1/buckets") == 2)
    }
}
