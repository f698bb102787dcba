import Testing

@testable import CohortMetrics
