// swift-tools-version: 6.0
import PackageDescription

// libFuzzer targets for every loader entry point, a package of their own (like Benchmarks/) so
// that nothing here touches the library's build. Build and run them with AddressSanitizer:
//
//     swift build -c release --package-path Fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//     Fuzz/.build/release/FuzzLoadJSON Fuzz/Corpus/json -dict=Fuzz/modelkit.dict -max_total_time=60
//
// `Fuzz/run` does both for every target; see Docs/Persistence.md, "Fuzzing".
let package = Package(
    name: "ModelKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "ModelKit", path: "..")
    ],
    targets: [
        .target(name: "FuzzSupport", dependencies: [.product(name: "ModelKit", package: "ModelKit")]),
        .executableTarget(name: "FuzzLoadJSON", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzLoadBinaryPlist", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzLoadXML", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzModelDecoders", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzWriteGraphs", dependencies: ["FuzzSupport"]),
        .executableTarget(name: "FuzzOpenStore", dependencies: ["FuzzSupport"]),
        // Writes the seed corpus from the fuzz models (run without sanitizers).
        .executableTarget(name: "FuzzSeeds", dependencies: ["FuzzSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
