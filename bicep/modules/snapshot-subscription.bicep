// BlobCreated events for snapshot blobs, delivered to the snapshot_written blob trigger
// (function_app.py: source=EVENT_GRID, path
// %MEMNET_BLOB_CONTAINER%/tenants/{tenant_id}/users/{user_id}/snapshots/...). The
// endpoint is the blob extension's webhook with the host's blobs_extension system key,
// read with listKeys as Microsoft's Flex Consumption samples do.
param topicName string
param functionAppName string
param containerName string
@description('The blob trigger function, as named in function_app.py.')
param functionName string = 'snapshot_written'

resource topic 'Microsoft.EventGrid/systemTopics@2022-06-15' existing = {
  name: topicName
}

resource site 'Microsoft.Web/sites@2024-04-01' existing = {
  name: functionAppName
}

var blobsExtensionKey = listKeys('${site.id}/host/default', '2024-04-01').systemKeys.blobs_extension
var endpoint = 'https://${site.properties.defaultHostName}/runtime/webhooks/blobs?functionName=Host.Functions.${functionName}&code=${blobsExtensionKey}'

resource subscription 'Microsoft.EventGrid/systemTopics/eventSubscriptions@2022-06-15' = {
  parent: topic
  name: 'memnet-snapshots'
  properties: {
    destination: {
      endpointType: 'WebHook'
      properties: {
        endpointUrl: endpoint
        maxEventsPerBatch: 1
        preferredBatchSizeInKilobytes: 64
      }
    }
    eventDeliverySchema: 'EventGridSchema'
    filter: {
      includedEventTypes: [
        'Microsoft.Storage.BlobCreated'
      ]
      // Prefix and suffix narrow to the container's JSON blobs; the advanced filter keeps
      // only snapshot paths (tenants/{t}/users/{u}/snapshots/...), so document writes
      // never wake the function.
      subjectBeginsWith: '/blobServices/default/containers/${containerName}/blobs/tenants/'
      subjectEndsWith: '.json'
      advancedFilters: [
        {
          operatorType: 'StringContains'
          key: 'subject'
          values: [
            '/snapshots/'
          ]
        }
      ]
    }
    retryPolicy: {
      maxDeliveryAttempts: 30
      eventTimeToLiveInMinutes: 1440
    }
  }
}
