// swift-tools-version: 6.0
import PackageDescription

// The library has no package dependencies by design: it uses only the toolchain's Foundation
// and Synchronization (and a one-header C target of its own, ModelKitShims); ModelKitServices adds
// Foundation's networking (FoundationNetworking on Linux). The benchmark suite is a separate package in Benchmarks/ so that its
// peers never become dependencies of ModelKit itself.
let package = Package(
    name: "ModelKit",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "ModelKit", targets: ["ModelKit"]),
        // Models tied to a backend server (Kinto for now); Foundation's networking only.
        .library(name: "ModelKitServices", targets: ["ModelKitServices"]),
        // The conformance checks a ModelService adapter runs in its own tests (no test framework
        // needed: each check throws what it expected and found).
        .library(name: "ModelKitServiceTesting", targets: ["ModelKitServiceTesting"]),
    ],
    targets: [
        .target(name: "ModelKit", dependencies: ["ModelKitShims"]),
        .target(name: "ModelKitServices", dependencies: ["ModelKit", "ModelKitShims"]),
        .target(name: "ModelKitServiceTesting", dependencies: ["ModelKitServices", "ModelKit"]),
        // One C header: the change epoch that property writes read on their fast path.
        .target(name: "ModelKitShims"),
        .target(
            name: "ModelKitTestSupport",
            dependencies: ["ModelKit"],
            path: "Tests/ModelKitTestSupport"
        ),
        // The service tests' models (a writer and their articles), shared with their child processes.
        .target(
            name: "ServiceTestModels",
            dependencies: ["ModelKitServices", "ModelKit"],
            path: "Tests/ServiceTestModels"
        ),
        // Killed mid-write, over and over, by the atomic-write test.
        .executableTarget(
            name: "PersistenceWriterChild",
            dependencies: ["ModelKit", "ModelKitTestSupport"],
            path: "Tests/PersistenceWriterChild"
        ),
        // Saves random changes to a store, over and over, until the store's kill test kills it.
        .executableTarget(
            name: "StoreKillChild",
            dependencies: ["ModelKit", "ModelKitTestSupport"],
            path: "Tests/StoreKillChild"
        ),
        // Reads through a service against a hostile server, its peak memory measured alone.
        .executableTarget(
            name: "ServiceClientChild",
            dependencies: ["ModelKitServices"],
            path: "Tests/ServiceClientChild"
        ),
        // Changes, saves and syncs a store, over and over, until the sync's kill test kills it.
        .executableTarget(
            name: "SyncKillChild",
            dependencies: ["ModelKitServices", "ModelKit", "ModelKitTestSupport", "ServiceTestModels"],
            path: "Tests/SyncKillChild"
        ),
        .testTarget(
            name: "ModelKitTests",
            dependencies: ["ModelKit", "ModelKitTestSupport", "PersistenceWriterChild", "StoreKillChild"],
            resources: [.copy("Fixtures")]
        ),
        // Runs against a real Kinto server that the tests start with Scripts/kinto-server.
        .testTarget(
            name: "ModelKitServicesTests",
            dependencies: [
                "ModelKitServices", "ModelKit", "ModelKitTestSupport", "ServiceClientChild", "SyncKillChild",
                "ModelKitServiceTesting", "ServiceTestModels",
            ]),
        // An adapter written as a third party writes one: public API only, no server.
        .testTarget(
            name: "ModelKitServiceAdapterTests",
            dependencies: ["ModelKitServices", "ModelKit", "ModelKitServiceTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
