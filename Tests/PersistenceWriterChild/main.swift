// A helper process for the atomic-write test: writes ever newer versions of a graph to one file
// until it is killed. Usage: PersistenceWriterChild <path> <json|bplist> <first generation>
// With --peak, it measures one in-memory output's peak memory instead (see PeakMemory.swift).
import Foundation
import ModelKit
import ModelKitTestSupport

let arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "--peak" { exit(try measurePeak(arguments)) }
guard arguments.count == 4, let first = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: PersistenceWriterChild <path> <json|bplist> <first generation>\n".utf8))
    exit(2)
}
let url = URL(fileURLWithPath: arguments[1])
let format: PersistenceFormat = arguments[2] == "bplist" ? .binaryPropertyList : .json
var number = first
while true {
    let context = ModelContext()
    let generation = Generation.instance(in: context)
    generation.number = number
    for index in 0..<2_000 {
        let item = Item.instance(in: context)
        item.generation = number
        item.text = "item \(index) of generation \(number), padded to make the file a few megabytes long"
        item.owner = generation
        generation.items.append(item)
    }
    try context.write(to: url, format: format)
    number += 1
}
