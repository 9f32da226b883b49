// The Event Grid system topic on the storage account. Its subscription to the blob
// trigger (snapshot-subscription.bicep) is a separate module: its webhook URL carries the
// host's blobs_extension key, which exists only once the code is deployed and the host
// has started, and Event Grid validates the endpoint when the subscription is created.
param name string
param location string
param tags object
param storageAccountId string

resource topic 'Microsoft.EventGrid/systemTopics@2022-06-15' = {
  name: name
  location: location
  tags: tags
  properties: {
    source: storageAccountId
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

output name string = topic.name
