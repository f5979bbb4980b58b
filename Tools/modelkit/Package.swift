// swift-tools-version: 6.0
import PackageDescription

// The `modelkit` command-line tool is its own package so that its argument parser never becomes a
// dependency of ModelKit. It depends on the library by path; `ModelKitTool` holds what the
// commands do (reading files without the app's model types), `modelkit` parses the arguments.
//
//     swift build -c release --package-path Tools/modelkit      # then .build/release/modelkit
//     swift test --package-path Tools/modelkit
let package = Package(
    name: "modelkit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [.executable(name: "modelkit", targets: ["modelkit"])],
    dependencies: [
        .package(name: "ModelKit", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .target(
            name: "ModelKitTool", dependencies: [.product(name: "ModelKit", package: "ModelKit")],
            path: "Sources/ModelKitTool"),
        .executableTarget(
            name: "modelkit",
            dependencies: ["ModelKitTool", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Sources/modelkit"),
        // The benchmark's fixture: a blog of N posts written by the library.
        .executableTarget(
            name: "modelkit-fixture", dependencies: [.product(name: "ModelKit", package: "ModelKit")],
            path: "Sources/modelkit-fixture"),
        .testTarget(
            name: "ModelKitToolTests",
            dependencies: ["ModelKitTool", .product(name: "ModelKit", package: "ModelKit")],
            path: "Tests/ModelKitToolTests"),
    ],
    swiftLanguageModes: [.v6]
)
