import CProtobufC
import Courier
